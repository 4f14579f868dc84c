"""Debounced jobs: one pending job per key, run once its key has been quiet for a while.

The database keeps one job of a kind per debounce key while that job waits
for its first claim (the ``jobs_debounce`` partial unique index): an enqueue
of a held key updates that job (its run time, and its payload unless the
first is kept) instead of storing another, never a check in Python before
the insert. This module computes the key and the write.
"""

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

from jobtable._codec import Codec
from jobtable._engines.base import Queries
from jobtable._engines.rows import NewJob
from jobtable._errors import StoreError
from jobtable._unique import EnqueueResult, Unique
from jobtable._values import timestamp


@dataclasses.dataclass(frozen=True, slots=True)
class Debounce:
    """Debounces an enqueue: one pending job per key, run once the key has been quiet.

    An enqueue with ``debounce=Debounce(quiet=timedelta(seconds=5), ...)``
    stores a job due ``quiet`` from now, unless a job of the kind already
    holds the key and has not started: then it stores nothing, moves that
    job's run time to ``quiet`` from now, and, with ``keep="last"`` (the
    default), gives it this enqueue's payload (``keep="first"`` keeps the
    payload it has). The job runs once, ``quiet`` after the last enqueue of
    its key; an enqueue after it started stores a new job. The enqueue
    returns the pending job's id (``enqueue_result`` says ``duplicate=True``
    when it was an earlier one's).

    The job keeps the options, tags, meta and partition and sequence keys of
    the enqueue that stored it: only its payload and run time change.

    Args:
        quiet: How long the key must go without an enqueue before its job
            runs; a positive timedelta.
        key: The key itself, the same for every enqueue of the kind.
        fields: The payload's top-level fields whose values make the key
            (``fields=("account_id",)``). With neither key nor fields, the
            whole payload is the key (a secret counts as its mask), as
            ``Unique`` computes it.
        keep: Which payload the pending job runs with: ``"last"`` (an
            enqueue of its key replaces it) or ``"first"`` (it keeps its own).

    Raises:
        ValueError: Both key and fields, a key that cannot be stored, a quiet
            period that is not positive, or a keep other than "last" or
            "first".
    """

    quiet: datetime.timedelta
    key: str | None = None
    fields: Sequence[str] | None = None
    keep: Literal["last", "first"] = "last"
    _unique: Unique = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.quiet, datetime.timedelta) or self.quiet <= datetime.timedelta(0):
            raise ValueError(f"Debounce: quiet must be a positive timedelta, got {self.quiet!r}")
        if self.keep not in ("last", "first"):
            raise ValueError(f"Debounce: keep must be 'last' or 'first', got {self.keep!r}")
        try:
            unique = Unique(key=self.key, fields=self.fields)
        except ValueError as err:
            raise ValueError(str(err).replace("Unique:", "Debounce:", 1)) from None
        object.__setattr__(self, "fields", unique.fields)
        object.__setattr__(self, "_unique", unique)

    def key_of(self, where: str, payload: str) -> str:
        """The debounce key stored for a job with JSON payload.

        Args:
            where: What the message names as the caller.
            payload: The job's payload, as JSON.

        Returns:
            The key.

        Raises:
            ValueError: A field is not in the payload, or the payload is not a
                JSON object when fields are given.
        """
        return self._unique.key_of(where, payload, _NO_PERIOD)


_NO_PERIOD = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)  # unused: a key has no period


T = TypeVar("T", bound=Mapping[str, Any])


def split_debounce(overrides: T) -> tuple[T, object]:
    """overrides (an enqueue's options) without debounce, and debounce apart (None: not given)."""
    if "debounce" not in overrides:
        return overrides, None
    rest = {k: v for k, v in overrides.items() if k != "debounce"}
    return cast(T, rest), overrides["debounce"]


def check_debounce(
    where: str,
    debounce: object,
    codec: "Codec[Any, Any]",
    unique: Unique | None,
    overrides: Mapping[str, object],
) -> Debounce | None:
    """Returns debounce, an enqueue's; raises TypeError or ValueError naming where for a bad one.

    Refuses it beside uniqueness (an enqueue's or its kind's: ``unique=None``
    turns the kind's off) and beside an enqueue's delay or run_at, since the
    quiet period sets the job's run time (a kind's delay gives way to it).
    """
    if debounce is None:
        return None
    if not isinstance(debounce, Debounce):
        raise TypeError(f"{where}: debounce must be a jobtable.Debounce or None, got {debounce!r}")
    if unique is not None:
        raise ValueError(
            f"{where}: debounce and unique both decide which jobs are the same one: give one "
            "(unique=None turns off the kind's)"
        )
    if overrides.get("delay") is not None or overrides.get("run_at") is not None:
        raise ValueError(
            f"{where}: debounce sets the job's run time (its quiet period from now): "
            "give no delay or run_at"
        )
    for field in debounce.fields or ():
        codec.check_field(where, "debounce", field)
    return debounce


def debounced(
    kind: str, where: str, debounce: Debounce, jobs: Sequence[NewJob], moment: datetime.datetime
) -> "tuple[list[NewJob], CreateDebouncedJobs]":
    """jobs, each with its debounce key and due the quiet period after moment, and their write."""
    try:
        due = timestamp(moment + debounce.quiet)
    except OverflowError:
        raise ValueError(
            f"{where}: quiet {debounce.quiet!r} puts run_at past the year 9999"
        ) from None
    keyed = [
        job._replace(debounce_key=debounce.key_of(where, job.payload), run_at=due) for job in jobs
    ]
    return keyed, CreateDebouncedJobs(kind, keyed, timestamp(moment), debounce.keep == "last")


# How many times an enqueue tries again when the update found no job of the
# key and the insert then found one (another enqueue stored it meanwhile)
# which a runner claimed before this update's retry; a few are plenty.
_TRIES = 50


class CreateDebouncedJobs:
    """The write that stores jobs of one kind, each unless a pending job holds its key.

    Returns an EnqueueResult per job, in order: a job whose key a pending job
    holds (one stored earlier in the batch included) is not stored; that
    job gets its run time (and, replace, its payload) and its result names
    it as a duplicate.
    """

    __slots__ = ("jobs", "kind", "now", "replace")

    def __init__(self, kind: str, jobs: Sequence[NewJob], now: str, replace: bool) -> None:
        self.kind = kind
        self.jobs = jobs
        self.now = now
        self.replace = replace

    def __call__(self, q: Queries) -> list[EnqueueResult]:
        return [self._one(q, job) for job in self.jobs]

    def _one(self, q: Queries, job: NewJob) -> EnqueueResult:
        if job.debounce_key is None:
            raise ValueError(f"enqueue {self.kind!r}: a debounced job without a key")
        for _ in range(_TRIES):
            # Update first: of concurrent enqueues, the insert decides who
            # stores the key's job, and each one that loses updates it.
            held = q.debounce_job(
                kind=self.kind,
                debounce_key=job.debounce_key,
                payload=job.payload,
                replace=self.replace,
                run_at=job.run_at,
                now=self.now,
            )
            if held is not None:
                return EnqueueResult(held, duplicate=True)
            if q.insert_debounced_job(kind=self.kind, job=job, now=self.now):
                return EnqueueResult(job.id, duplicate=False)
        raise StoreError(
            f"enqueue {self.kind!r}: the debounce key's job changed {_TRIES} times "
            "during one enqueue"
        )
