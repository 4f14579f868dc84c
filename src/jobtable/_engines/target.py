"""What ``Store.open`` takes as a target: a SQLite file or a PostgreSQL URL, and its engine.

One place reads a target, so that opening a store, reading its schema's
version and upgrading it agree on what a target means.
"""

import os
import re
from typing import Literal

from jobtable._engines.base import Engine
from jobtable._engines.sqlite.engine import SQLiteEngine, read_schema_version
from jobtable._engines.sqlite.file import SCHEMA_VERSION as SQLITE_VERSION
from jobtable._engines.sqlite.wal_limit import WAL_LIMIT
from jobtable._errors import StoreError
from jobtable._values import redact_url

URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
"""A target that starts like a URL: its password, if any, is redacted wherever it is shown."""

_SQLITE_PREFIX = "sqlite:///"
_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def parse_target(
    target: str | os.PathLike[str],
) -> tuple[Literal["sqlite", "postgres"], str | os.PathLike[str]]:
    """Returns the engine of target and what that engine opens: a path, or the URL itself.

    Raises TypeError for a target that is neither a str nor a path, and
    StoreError, naming it without any password, for a URL of another scheme.
    """
    if not isinstance(target, str | os.PathLike):
        raise TypeError(f"Store.open: target is {type(target).__name__}, want str or a path")
    if isinstance(target, str) and (match := URL_SCHEME.match(target)):
        scheme = match.group(1).lower()
        if scheme in _POSTGRES_SCHEMES:
            return "postgres", target
        if scheme != "sqlite" or not target.startswith(_SQLITE_PREFIX):
            raise StoreError(
                f"cannot open {redact_url(target)}: want a file path, "
                "sqlite:///path or postgresql://…"
            )
        return "sqlite", target[len(_SQLITE_PREFIX) :]
    return "sqlite", target


def _need_psycopg(url: str) -> None:
    """Raises StoreError, saying what to install, when psycopg is missing."""
    try:
        # Imported only here and below: psycopg is an optional dependency,
        # and SQLite users never load it.
        import psycopg  # noqa: F401
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.split(".")[0] == "psycopg":
            raise StoreError(
                f"cannot open {redact_url(url)}: PostgreSQL needs psycopg; "
                "install jobtable[postgres]"
            ) from err
        raise


def _check_pooler_types(pooled: object, listen_url: object, max_connections: object) -> None:
    """Raises TypeError, naming the option and what it wants, for a value of another type.

    Before any connection: a value read from the environment as text
    (``pooled="0"``, ``max_connections="10"``) would otherwise pass as true
    or fail deep inside with a comparison error.
    """
    if not isinstance(pooled, bool):
        raise TypeError(
            f"Store.open: pooled is {pooled!r} ({type(pooled).__name__}), want True or False; "
            "turn a setting read as text into a bool first"
        )
    if listen_url is not None and not isinstance(listen_url, str):
        raise TypeError(
            f"Store.open: listen_url is a {type(listen_url).__name__}, want a postgresql:// URL"
        )
    if max_connections is not None and (
        isinstance(max_connections, bool) or not isinstance(max_connections, int)
    ):
        raise TypeError(
            f"Store.open: max_connections is {max_connections!r} "
            f"({type(max_connections).__name__}), want an int of at least 1 or None"
        )


def open_engine(
    target: str | os.PathLike[str],
    *,
    durable: bool,
    busy_timeout: float,
    readers: int,
    upgrade: bool,
    wal_limit: int | None = WAL_LIMIT,
    pooled: bool = False,
    listen_url: str | None = None,
    max_connections: int | None = None,
) -> tuple[Engine, str]:
    """Opens target's engine; returns it and the target as the store shows it.

    Without upgrade, a schema that is missing or older is refused with a
    StoreError and left as it is. wal_limit is the SQLite engine's (see
    ``SQLiteEngine.open``); PostgreSQL has none. pooled, listen_url and
    max_connections (None: the engine's default) are PostgreSQL's (see
    ``PostgresEngine.open``); for SQLite, any of them raises ValueError.
    """
    _check_pooler_types(pooled, listen_url, max_connections)
    engine, where = parse_target(target)
    if engine == "postgres":
        url = os.fspath(where)
        _need_psycopg(url)
        from jobtable._engines.postgres.engine import MAX_CONNECTIONS, PostgresEngine

        opened: Engine = PostgresEngine.open(
            url,
            durable=durable,
            upgrade=upgrade,
            pooled=pooled,
            listen_url=listen_url,
            max_connections=MAX_CONNECTIONS if max_connections is None else max_connections,
        )
        return opened, url
    if pooled or listen_url is not None or max_connections is not None:
        raise ValueError(
            f"pooled, listen_url and max_connections are for a PostgreSQL URL, and "
            f"{os.fspath(where)!r} is a SQLite file; leave them unset"
        )
    sqlite = SQLiteEngine.open(
        where,
        durable=durable,
        busy_timeout=busy_timeout,
        readers=readers,
        upgrade=upgrade,
        wal_limit=wal_limit,
    )
    return sqlite, str(sqlite.path)


def schema_versions(target: str | os.PathLike[str]) -> tuple[int, int]:
    """Returns the version of the jobtable schema at target (0: none) and the latest one.

    The latest is the version this jobtable writes on target's engine.
    Changes nothing, and creates no SQLite file.
    """
    engine, where = parse_target(target)
    if engine == "postgres":
        url = os.fspath(where)
        _need_psycopg(url)
        from jobtable._engines.postgres.engine import read_schema_version as read_postgres_version
        from jobtable._engines.postgres.schema import SCHEMA_VERSION as POSTGRES_VERSION

        return read_postgres_version(url), POSTGRES_VERSION
    return read_schema_version(where), SQLITE_VERSION
