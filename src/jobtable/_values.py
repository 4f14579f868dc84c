"""The values jobtable writes and shows: sortable times, job ids, storable text, redacted URLs.

A leaf: it imports nothing of jobtable, so every other module may use it.
"""

import binascii
import os
import re
import time
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_TWO_DIGITS = tuple(f"{n:02d}" for n in range(100))
"""Each month, day, hour, minute and second as its two digits, looked up rather than formatted."""


def timestamp(moment: datetime) -> str:
    """Returns an aware datetime as UTC text ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

    The text has a fixed width, so comparing two texts compares the times:
    the year is padded to four digits too (``0999-...``). Raises ValueError
    for a naive datetime.
    """
    if moment.tzinfo is None:
        raise ValueError(f"timestamp({moment!r}): a naive datetime has no time zone")
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    # Every enqueue takes one: this is a third of strftime's cost, for the same text.
    two = _TWO_DIGITS
    return "%04d-%s-%sT%s:%s:%s.%06dZ" % (  # noqa: UP031 (faster than format specs here)
        utc.year,
        two[utc.month],
        two[utc.day],
        two[utc.hour],
        two[utc.minute],
        two[utc.second],
        utc.microsecond,
    )


def now() -> str:
    """Returns the current UTC time as text that sorts in time order (see timestamp).

    It follows the wall clock, which may step back; the order of the queue
    comes from the enqueue sequence, never from these times.
    """
    return timestamp(datetime.now(UTC))


_SORTABLE = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz",
)
"""base64's 64 digits, each replaced by the URL-safe character of the same rank in byte order."""

_TOP_BIT = 1 << 47
"""The top bit of an id's 48 bits of time."""


def new_id() -> str:
    """Returns a new job id: 22 URL-safe characters, the time first, then 80 random bits.

    The first 48 bits are the wall clock's milliseconds since the epoch
    (their top bit set: the id begins with a letter), written so that the
    text sorts as the bits do: jobs enqueued together have neighbouring
    ids, so a commit of many enqueues, and a prune of many old jobs, writes
    a few pages of the index on ids instead of about one a job. The order
    of the queue never comes from ids (the clock may step back), nor does
    uniqueness (the index on ids holds it). Ids appear in URLs, so the
    other 80 bits come from ``os.urandom``, as ``secrets`` tokens do, and
    cannot be guessed; an id shows when its job was made, to the
    millisecond, as the job's ``created_at`` does.
    """
    return id_at(time.time_ns() // 1_000_000)


def id_at(millis: int) -> str:
    """Returns a new job id made at millis milliseconds since the epoch (see new_id)."""
    # The top bit set makes the first character a letter ("V" until 2109),
    # never "-", which a command line would read as an option.
    raw = (millis | _TOP_BIT).to_bytes(6, "big") + os.urandom(10)
    return binascii.b2a_base64(raw, newline=False).translate(_SORTABLE)[:22].decode()


def checked_id(value: str, what: str = "job") -> str:
    """Returns value, a caller's id of what ("job", "workflow"); raises TypeError unless a str.

    The one check of every call that takes an id: any str is accepted here
    (one no engine can store is no row's id, for the caller to answer as not
    found), anything else is a caller's mistake named at the call.
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} id is {type(value).__name__}, want str")
    return value


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
# libpq's keyword form, "host=db user=app password=...", which a user may pass as a target.
_KEYWORD_PASSWORD = re.compile(r"(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def _passwords(url: str) -> list[str]:
    found = [m.group(2) for m in [_USERINFO_PASSWORD.match(url)] if m and m.group(2)]
    found += [m.group(1) for m in _KEYWORD_PASSWORD.finditer(url)]
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
