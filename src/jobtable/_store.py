"""The store: the database a runner keeps its jobs in, and the ids and times it writes."""

import os
import re
import secrets
from datetime import UTC, datetime
from types import TracebackType
from typing import Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from jobtable._engine import Engine
from jobtable._errors import StoreError
from jobtable._sqlite import SQLiteEngine

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SQLITE_PREFIX = "sqlite:///"
_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def timestamp(moment: datetime) -> str:
    """Returns an aware datetime as UTC text ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

    The text has a fixed width, so comparing two texts compares the times.
    Raises ValueError for a naive datetime.
    """
    if moment.tzinfo is None:
        raise ValueError(f"timestamp({moment!r}): a naive datetime has no time zone")
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)


def now() -> str:
    """Returns the current UTC time as text that sorts in time order (see timestamp).

    It follows the wall clock, which may step back; the order of the queue
    comes from the enqueue sequence, never from these times.
    """
    return timestamp(datetime.now(UTC))


def new_id() -> str:
    """Returns a new job id: 128 random bits as 22 URL-safe characters.

    Ids appear in URLs, so they come from ``secrets`` and cannot be guessed.
    """
    return secrets.token_urlsafe(16)


def unstorable(text: str) -> str | None:
    """Returns why text cannot be stored as it is in both engines' text columns, or None.

    PostgreSQL text cannot hold NUL, and neither engine can encode a lone
    surrogate (a str that is not valid Unicode) as UTF-8. SQLite could hold
    the first; refusing it on both keeps the engines alike.
    """
    if "\x00" in text:
        return "it contains a NUL character"
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "it contains a lone surrogate, which is not valid Unicode"
    return None


def storable(text: str) -> str:
    """Returns text with what unstorable refuses escaped, as Python writes it in a literal.

    NUL becomes ``\\x00`` and a lone surrogate ``\\udXXX``. It is the one
    escape for text the runner stores rather than refuses (a Failure's
    message), the same on every engine.
    """
    if unstorable(text) is None:
        return text
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode()


_USERINFO_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?#]*):([^@]*)@")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*")


def _passwords(url: str) -> list[str]:
    found = [m.group(2) for m in [_USERINFO_PASSWORD.match(url)] if m and m.group(2)]
    return found + [m.group(0).split("=", 1)[1] for m in _QUERY_PASSWORD.finditer(url)]


def scrub(text: str, url: str) -> str:
    """Returns text, which may quote url (a driver's error does), without url's password."""
    text = text.replace(url, redact_url(url))
    for password in _passwords(url):
        if password:
            text = text.replace(password, "***")
    return text


def redact_url(url: str) -> str:
    """Returns url with any password replaced by ``***``, safe to log or show.

    A URL too malformed to parse is redacted by pattern instead; this never raises.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port raises only when read)
    except ValueError:
        return _QUERY_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1:***@", url))
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{host}"
    query = parts.query
    if query:
        # libpq also takes the password as a query parameter.
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key == "password" for key, _ in pairs):
            query = urlencode(
                [(key, "***" if key == "password" else value) for key, value in pairs],
                safe="*",
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _open_postgres(url: str, *, durable: bool) -> Engine:
    try:
        # Imported here: psycopg is an optional dependency, and SQLite users
        # never load it.
        from jobtable._postgres import PostgresEngine
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.split(".")[0] in ("psycopg", "psycopg_pool"):
            raise StoreError(
                f"cannot open {redact_url(url)}: PostgreSQL needs psycopg; "
                "install jobtable[postgres]"
            ) from err
        raise
    engine: Engine = PostgresEngine.open(url, durable=durable)
    return engine


class Store:
    """The database a runner keeps its jobs in: a SQLite file or a PostgreSQL server.

    A store opened once is shared by every runner and enqueuer of the process
    and is safe to use from any thread. Close it when done, or use it as a
    context manager; a closed store raises StoreError.
    """

    engine: Engine
    """The database engine every read and write of the store goes through."""

    def __init__(self, engine: Engine, *, target: str) -> None:
        """Wraps an open engine; repr shows target, without any password.

        Use ``Store.open`` instead.
        """
        self.engine = engine
        # Only the redacted form is kept, so no password lingers in the object.
        self._target = redact_url(target) if _URL_SCHEME.match(target) else target

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str],
        *,
        durable: bool = True,
        busy_timeout: float = 5.0,
        readers: int = 4,
    ) -> Self:
        """Opens the store at target, creating the database or its schema when missing.

        target is a SQLite file: a path, or ``sqlite:///relative/path`` or
        ``sqlite:////absolute/path``; or a PostgreSQL server:
        ``postgresql://…`` (``postgres://…``), which needs the
        ``jobtable[postgres]`` extra. Raises StoreError, naming the target and
        the cause, for a target that cannot be used, and leaves it unchanged.

        With durable (the default), a write that returned survives a power
        loss. Without it, a power loss may lose the last writes but never
        corrupts the database. busy_timeout (SQLite, in seconds) is how long a
        write waits for another process's lock; readers (SQLite) is how many
        reads may run at once.
        """
        if not isinstance(target, str | os.PathLike):
            raise TypeError(f"Store.open: target is {type(target).__name__}, want str or a path")
        if isinstance(target, str) and (match := _URL_SCHEME.match(target)):
            scheme = match.group(1).lower()
            if scheme in _POSTGRES_SCHEMES:
                return cls(_open_postgres(target, durable=durable), target=target)
            if scheme != "sqlite" or not target.startswith(_SQLITE_PREFIX):
                raise StoreError(
                    f"cannot open {redact_url(target)}: want a file path, "
                    "sqlite:///path or postgresql://…"
                )
            target = target[len(_SQLITE_PREFIX) :]
        sqlite = SQLiteEngine.open(
            target, durable=durable, busy_timeout=busy_timeout, readers=readers
        )
        return cls(sqlite, target=str(sqlite.path))

    def close(self) -> None:
        """Finishes the writes under way and closes the database; again does nothing."""
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<jobtable.Store {type(self.engine).__name__} {self._target!r}>"
