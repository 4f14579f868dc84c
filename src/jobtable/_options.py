"""A kind's job options: attempts, retry backoff, schedule, priority, queue and timeout.

A kind declares defaults; each enqueue may override them. Every value is
checked before anything is stored, and a bad one raises an error naming
the option.
"""

import dataclasses
import datetime
import math
import random
from collections.abc import Callable, Iterable
from typing import Any, TypedDict

from jobtable._debounce import Debounce
from jobtable._unique import Unique
from jobtable._values import timestamp, unstorable

RetryPolicy = Callable[[int], datetime.timedelta]
"""How long to wait before the next attempt, given the number of the attempt that failed."""

_INT32 = 1 << 31


class PeriodicOptions(TypedDict, total=False):
    """The options of a periodic schedule's jobs (``Runner.periodic``): every job's but its time.

    A tick's time is its job's run_at, so a schedule takes neither
    ``delay`` nor ``run_at``; ``JobOptions`` adds them.
    """

    max_attempts: int
    priority: int
    queue: str
    timeout: float | None
    partition_key: str | None
    """The job's partition key, instead of the one its kind's ``Partition`` computes."""
    sequence_key: str | None
    """The job's sequence key, instead of the one its kind's ``Sequence`` computes."""
    tags: "Iterable[str] | None"
    """Tags added to the kind's, for this enqueue's jobs (see ``Kind``)."""
    meta: object
    """The jobs' metadata: an instance of the kind's meta model, or a JSON object."""


class JobOptions(PeriodicOptions, total=False):
    """The options every way of creating a job takes, overriding its kind's (see ``Kind``).

    ``Kind.enqueue`` and its relatives, a workflow's nodes (plain and fed)
    and ``ctx.workflow.add`` all take exactly these, a periodic schedule
    all but its time (``PeriodicOptions``), and one function
    (``Kind._create``) applies them with the kind's declarations.
    """

    delay: datetime.timedelta | None
    run_at: datetime.datetime | None


class EnqueueOptions(JobOptions, total=False):
    """An enqueue's options: every job's (``JobOptions``), its uniqueness, debounce and conn.

    A workflow's job takes none of them: its nodes take ``JobOptions``.
    """

    unique: "Unique | None"
    debounce: "Debounce | None"
    """One pending job per key, run once the key has been quiet (see ``jobtable.Debounce``)."""
    conn: object
    """The application's own connection whose transaction the jobs join (see ``Kind.enqueue``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """The default retry policy: first, doubling after each failed attempt, up to cap, with jitter.

    The wait after attempt n is ``min(cap, first * 2 ** (n - 1))``, then
    moved by up to ``jitter`` of itself either way (0.1: ±10 %), so that jobs
    that failed together do not all come back together.

    Args:
        first: The wait after the first failed attempt.
        cap: The longest wait.
        jitter: The share of each wait by which it may move either way, in
            [0, 1).

    Raises:
        ValueError: Unless 0 < first <= cap and 0 <= jitter < 1.
    """

    first: datetime.timedelta = datetime.timedelta(seconds=1)
    cap: datetime.timedelta = datetime.timedelta(hours=1)
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if not datetime.timedelta(0) < self.first <= self.cap:
            raise ValueError(f"ExponentialBackoff: want 0 < first <= cap, got {self!r}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"ExponentialBackoff: jitter must be in [0, 1), got {self.jitter!r}")

    def __call__(self, attempt: int) -> datetime.timedelta:
        wait = self.cap
        if attempt - 1 < 64:
            wait = min(self.cap, self.first * (2 ** max(attempt - 1, 0)))
        spread = 1 + self.jitter * (2 * random.random() - 1)
        return wait * spread


DEFAULT_RETRY = ExponentialBackoff()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
    """The options of a job, checked: see ``Kind``."""

    max_attempts: int = 1
    priority: int = 0
    queue: str = "default"
    timeout: float | None = None
    delay: datetime.timedelta | None = None

    def merged(self, where: str, overrides: dict[str, Any]) -> "Options":
        """Returns these options with overrides, checked; raises naming where and the option."""
        unknown = overrides.keys() - _OPTION_NAMES
        if unknown:
            raise TypeError(f"{where}: unknown option {sorted(unknown)[0]!r}")
        # What dataclasses.replace does, for a fifth of its cost: an enqueue may pay it.
        get = overrides.get
        options = Options(
            get("max_attempts", self.max_attempts),
            get("priority", self.priority),
            get("queue", self.queue),
            get("timeout", self.timeout),
            get("delay", self.delay),
        )
        options.check(where)
        return options

    def check(self, where: str) -> None:
        """Raises TypeError or ValueError, naming where and the option, for a bad value."""
        if not _is_int(self.max_attempts):
            raise TypeError(f"{where}: max_attempts must be an int, got {self.max_attempts!r}")
        if not 1 <= self.max_attempts < _INT32:
            raise ValueError(f"{where}: max_attempts must be at least 1, got {self.max_attempts}")
        if not _is_int(self.priority):
            raise TypeError(f"{where}: priority must be an int, got {self.priority!r}")
        if not -_INT32 <= self.priority < _INT32:
            raise ValueError(f"{where}: priority must fit in 32 bits, got {self.priority}")
        if not isinstance(self.queue, str) or not self.queue:
            raise ValueError(f"{where}: queue must be a non-empty str, got {self.queue!r}")
        if why := unstorable(self.queue):
            raise ValueError(f"{where}: queue {self.queue!r} cannot be stored: {why}")
        if self.timeout is not None and (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, int | float)
            or not math.isfinite(self.timeout)
            or self.timeout <= 0
        ):
            raise ValueError(
                f"{where}: timeout must be a positive number of seconds or None, "
                f"got {self.timeout!r}"
            )
        if self.delay is not None and (
            not isinstance(self.delay, datetime.timedelta) or self.delay < datetime.timedelta(0)
        ):
            raise ValueError(f"{where}: delay must be a timedelta of 0 or more, got {self.delay!r}")

    def run_at(self, where: str, now: datetime.datetime, run_at: object) -> str:
        """The job's run_at as stored: run_at itself, or now plus the delay."""
        if run_at is None:
            try:
                return timestamp(now if self.delay is None else now + self.delay)
            except OverflowError:
                raise ValueError(
                    f"{where}: delay {self.delay!r} puts run_at past the year 9999"
                ) from None
        if not isinstance(run_at, datetime.datetime) or run_at.tzinfo is None:
            raise ValueError(f"{where}: run_at must be an aware datetime, got {run_at!r}")
        if self.delay is not None:
            raise ValueError(f"{where}: give run_at or delay, not both")
        return timestamp(run_at)


_OPTION_NAMES = frozenset(field.name for field in dataclasses.fields(Options))
"""The options an enqueue may override; merged builds Options from exactly these."""


_REMEMBERED = frozenset({int, float, str, datetime.timedelta, type(None)})
"""The types of override whose equal values are alike in every way, so a merge can be reused."""


class Merges:
    """Merges enqueues' overrides into a kind's options, remembering up to size merges.

    An enqueue that gives the same overrides as an earlier one (``queue="emails"``
    on every call) gets the options checked then, instead of building and
    checking them again. Only values of plain types are remembered, and each by
    its type too, so that ``True`` is never taken for ``1`` nor ``1.0`` for
    ``1``: what was checked is exactly what is given.
    """

    __slots__ = ("_made", "_size")

    def __init__(self, size: int = 64) -> None:
        self._made: dict[tuple[object, ...], tuple[Options, Options]] = {}
        self._size = size

    def merged(self, where: str, base: Options, overrides: dict[str, Any]) -> Options:
        """base.merged(where, overrides), or the same merge made before from base."""
        types = tuple(map(type, overrides.values()))
        if not _REMEMBERED.issuperset(types):
            return base.merged(where, overrides)
        key = (*overrides.items(), *types)
        made = self._made.get(key)
        if made is not None and made[0] is base:
            return made[1]
        options = base.merged(where, overrides)
        if made is not None or len(self._made) < self._size:
            self._made[key] = (base, options)
        return options


def check_retry(where: str, retry: object) -> RetryPolicy:
    """Returns retry (None: the default policy); raises TypeError naming where if not callable."""
    if retry is None:
        return DEFAULT_RETRY
    if not callable(retry):
        raise TypeError(f"{where}: retry must be a callable (attempt) -> timedelta, got {retry!r}")
    policy: RetryPolicy = retry
    return policy
