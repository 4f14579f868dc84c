"""The values jobtable writes and shows: times as sortable text, job ids, redacted URLs.

A leaf: it imports nothing of jobtable, so every other module may use it.
"""

import secrets
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


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


def redact_url(url: str) -> str:
    """Returns url with any password replaced by ``***``, safe to log or show."""
    parts = urlsplit(url)
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
