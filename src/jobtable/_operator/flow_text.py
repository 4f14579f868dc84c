"""Queue limits as an operator types and reads them (``5``, ``60/1m``), in the CLI and dashboard.

Each parse raises ValueError naming the option or field it read, before
anything is stored; ``Store.set_limits`` checks the values again.
"""

import datetime
import math
import re

from jobtable._flow import Rate
from jobtable._operator.queues import QueueInfo

MAX_LIMIT = (1 << 31) - 1
"""The largest limit the queues table stores."""

_DURATION = re.compile(r"(\d+)([wdhms])")
_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str, name: str) -> datetime.timedelta:
    """The duration text gives, such as ``7d``, ``12h``, ``1h30m`` or ``90s``.

    Raises ValueError naming name for any other text.
    """
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{name} {text!r}: want a duration such as 7d, 12h, 1h30m or 90s")
    delta = datetime.timedelta()
    try:
        for number, unit in parts:
            delta += datetime.timedelta(**{_UNITS[unit]: int(number)})
    except OverflowError:
        raise ValueError(
            f"{name} {text!r}: too long, the most is {datetime.timedelta.max.days}d"
        ) from None
    return delta


def parse_limit(name: str, text: str) -> int | None:
    """The limit text gives, a whole number from 1 to MAX_LIMIT; None for an empty text."""
    text = text.strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_LIMIT:
        raise ValueError(f"{name} {text[:40]!r}: want a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def parse_rate(name: str, text: str, per_key: bool = False) -> Rate | None:
    """The rate text gives as LIMIT/PERIOD (``60/1m``, ``5/1s``, ``1000/1h``); None when empty.

    per_key makes it count per partition key; it needs a rate.
    """
    text = text.strip()
    if not text:
        if per_key:
            raise ValueError(f"{name}: a rate per key needs a rate, such as 60/1m")
        return None
    limit, slash, period = text.partition("/")
    if not slash or not limit.strip():
        raise ValueError(f"{name} {text[:40]!r}: want LIMIT/PERIOD, such as 60/1m or 5/1s")
    count = parse_limit(f"{name} limit", limit)
    per = parse_duration(period.strip(), f"{name} period")
    if count is None or per <= datetime.timedelta(0):
        raise ValueError(f"{name} {text[:40]!r}: the period must be longer than 0s")
    return Rate(count, per, per_key)


def period_text(seconds: float) -> str:
    """A rate's period as parse_duration reads it (``1m``, ``1h30m``); ``0.5s`` for a fraction."""
    if not math.isfinite(seconds) or seconds != int(seconds) or seconds <= 0:
        return f"{seconds:g}s"
    left = int(seconds)
    parts = []
    for unit, size in _SECONDS.items():
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts)


def rate_text(queue: QueueInfo) -> str:
    """The queue's rate as ``60/1m`` (``60/1m per key``), or ``-`` for none."""
    if queue.rate_limit is None or queue.rate_per is None:
        return "-"
    text = f"{queue.rate_limit}/{period_text(queue.rate_per)}"
    return f"{text} per key" if queue.rate_per_key else text


def limited(queue: QueueInfo) -> bool:
    """Whether the queue has any limit."""
    return any(v is not None for v in (queue.concurrency, queue.partition_limit, queue.rate_limit))


def limits_by(queue: QueueInfo) -> str:
    """Who set the limits claims obey: ``operator``, ``code`` (a declaration), or ``-`` for none."""
    if queue.overridden:
        return "operator"
    return "code" if limited(queue) else "-"


def every_queue(listed: list[QueueInfo], names: list[str]) -> list[QueueInfo]:
    """listed (``Store.queues``) with the queues of names it leaves out, by name.

    ``Store.queues`` leaves out a queue whose jobs have all finished and that
    has no flow control; names (``Store.queue_names``) has every queue some
    job is in, so an operator sees, and may pause, those too.
    """
    known = {queue.name for queue in listed}
    idle = [
        QueueInfo(
            name=name,
            paused=False,
            concurrency=None,
            partition_limit=None,
            rate_limit=None,
            rate_per=None,
            rate_per_key=False,
            overridden=False,
            queued=0,
            running=0,
        )
        for name in names
        if name not in known
    ]
    return sorted([*listed, *idle], key=lambda queue: queue.name)
