"""Unique jobs: which jobs of a kind count as the same one, and for how long.

The database enforces it (the ``jobs_unique`` partial unique index), never a
check in Python before the insert: this module only computes the key a job
is stored with and the statuses it covers.
"""

import dataclasses
import datetime
import hashlib
import json
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from jobtable._codec import Codec
from jobtable._engines.base import Queries, Statement
from jobtable._engines.rows import NewJob
from jobtable._errors import StoreError
from jobtable._job import Status
from jobtable._secrets import masked
from jobtable._values import new_id, timestamp, unstorable

# The bit of each status in unique_statuses, as jobs_unique's CASE has them.
_BITS = {
    Status.QUEUED: 1,
    Status.RUNNING: 2,
    Status.SUCCEEDED: 4,
    Status.FAILED: 8,
    Status.CANCELLED: 16,
}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# Longer keys are stored as a digest: an index entry has a size limit.
_MAX_KEY_BYTES = 500

ALL_STATUSES = frozenset(Status) - {Status.PENDING}
"""Every status: a key that covers them all is held until its job is pruned."""


def check_unique(where: str, unique: object, codec: "Codec[Any, Any]") -> "Unique | None":
    """Returns unique, a kind's or an enqueue's; raises TypeError or ValueError naming a bad one.

    Unique fields are checked against the payload type's fields when the
    type fixes them (a model, a dataclass, a TypedDict), so a misspelt field
    is refused when the kind is made, not at its first enqueue.
    """
    if unique is not None and not isinstance(unique, Unique):
        raise TypeError(f"{where}: unique must be a jobtable.Unique or None, got {unique!r}")
    if unique is None or unique.fields is None:
        return unique
    for field in unique.fields:
        codec.check_field(where, "unique", field)
    return unique


class EnqueueResult(NamedTuple):
    """What an enqueue stored: the job's id, and whether it was a duplicate.

    duplicate is True when a job of the kind already held the unique key:
    nothing was stored, and id is that job's.
    """

    id: str
    duplicate: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Unique:
    """Makes a kind's jobs unique: at most one job of the kind per key at a time.

    While a job holds its key, another enqueue of the key is a duplicate: it
    stores nothing and never raises, and reports the holder's id. With the
    default statuses that is while the job waits, runs or waits for a retry;
    once it succeeds, fails or is cancelled the key is free again, unless
    that status is in statuses too, in which case the key stays taken until
    the job is pruned.

    Args:
        key: The key itself, the same for every job of the kind.
        fields: The payload's top-level fields whose values make the key
            (``fields=("account_id",)``). With neither key nor fields, the
            whole payload is the key.
        period: The key also holds the start of the period the enqueue falls
            in (periods are counted from 1970-01-01 UTC:
            ``timedelta(days=1)`` is one per UTC day), so the next period's
            enqueue is a new job.
        statuses: The statuses in which a job holds its key: queued and
            running always (a job moves between them on a claim or a retry),
            and by default only them.

    Raises:
        ValueError: Both key and fields, a key that cannot be stored, a
            period that is not positive, or statuses without queued and
            running.
    """

    key: str | None = None
    fields: Sequence[str] | None = None
    period: datetime.timedelta | None = None
    statuses: AbstractSet[Status] = frozenset({Status.QUEUED, Status.RUNNING})

    def __post_init__(self) -> None:
        if self.key is not None and self.fields is not None:
            raise ValueError("Unique: give key or fields, not both")
        if self.key is not None:
            if not isinstance(self.key, str) or not self.key:
                raise ValueError(f"Unique: key must be a non-empty str, got {self.key!r}")
            if why := unstorable(self.key):
                raise ValueError(f"Unique: the key cannot be stored: {why}")
        if self.fields is not None:
            fields = (self.fields,) if isinstance(self.fields, str) else tuple(self.fields)
            if not fields or not all(isinstance(f, str) and f for f in fields):
                raise ValueError(f"Unique: fields must be non-empty names, got {self.fields!r}")
            object.__setattr__(self, "fields", fields)
        if self.period is not None and (
            not isinstance(self.period, datetime.timedelta) or self.period <= datetime.timedelta(0)
        ):
            raise ValueError(f"Unique: period must be a positive timedelta, got {self.period!r}")
        statuses = _statuses(self.statuses)
        object.__setattr__(self, "statuses", statuses)

    @property
    def mask(self) -> int:
        """The statuses as the bitmask stored in unique_statuses."""
        return sum(_BITS[s] for s in self.statuses)

    def key_of(self, where: str, payload: str, now: datetime.datetime) -> str:
        """The key stored for a job with JSON payload enqueued at now.

        A secret counts as its mask: two payloads that differ only in a
        secret have one key, which never holds a secret.

        Args:
            where: What the message names as the caller.
            payload: The job's payload, as JSON.
            now: When the job is enqueued, for a period's start.

        Returns:
            The key.

        Raises:
            ValueError: A field is not in the payload, or the payload is not
                a JSON object when fields are given.
        """
        if self.key is not None:
            base = "key:" + self.key
        elif self.fields is not None:
            value = masked(json.loads(payload), payload)
            if not isinstance(value, dict):
                raise ValueError(f"{where}: unique fields need a payload that is a JSON object")
            missing = [f for f in self.fields if f not in value]
            if missing:
                raise ValueError(f"{where}: unique field {missing[0]!r} is not in the payload")
            base = "fields:" + _canonical({f: value[f] for f in self.fields})
        else:
            base = "payload:" + _canonical(masked(json.loads(payload), payload))
        if self.period is not None:
            start = _EPOCH + (now - _EPOCH) // self.period * self.period
            # A timestamp starts with a digit, and a key without one never does.
            base = f"{timestamp(start)}/{base}"
        if len(base.encode()) > _MAX_KEY_BYTES:
            base = "sha256:" + hashlib.sha256(base.encode()).hexdigest()
        return base


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _statuses(statuses: Iterable[Status | str]) -> frozenset[Status]:
    if isinstance(statuses, str):
        raise ValueError(f"Unique: statuses must be a set of statuses, got {statuses!r}")
    try:
        chosen = frozenset(Status(s) for s in statuses)
    except (TypeError, ValueError) as err:
        raise ValueError(f"Unique: statuses must be statuses, got {statuses!r}") from err
    if Status.PENDING in chosen:
        raise ValueError("Unique: a job of a workflow, the only one pending, cannot be unique")
    if not {Status.QUEUED, Status.RUNNING} <= chosen:
        raise ValueError(
            "Unique: statuses must hold queued and running: a job moves between them "
            f"without leaving its key, got {sorted(chosen)!r}"
        )
    return chosen


# How many times an enqueue tries again when the key's holder left its
# covered statuses between the insert and the read; each try means another
# process took and freed the key meanwhile, so a few are plenty.
_TRIES = 50


class CreateUniqueJobs:
    """The write that stores jobs of one kind, each unless its key is held, in one transaction.

    Returns an EnqueueResult per job, in order: a job whose key another job
    holds (one stored earlier in the batch included) is not stored, and its
    result names the holder.
    """

    __slots__ = ("jobs", "kind", "now")

    def __init__(self, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        self.kind = kind
        self.jobs = jobs
        self.now = now

    def __call__(self, q: Queries) -> list[EnqueueResult]:
        # Insert first and read after: a read first could miss a holder
        # inserted meanwhile, which is how check-then-insert makes duplicates.
        stored = q.insert_unique_jobs(kind=self.kind, jobs=self.jobs, now=self.now)
        return [
            EnqueueResult(job.id, duplicate=False) if ok else _holder(q, self.kind, job, self.now)
            for job, ok in zip(self.jobs, stored, strict=True)
        ]


class CreateUniqueJob(CreateUniqueJobs, Statement[list[EnqueueResult]]):
    """CreateUniqueJobs of one job: its insert, then on a collision the read of the holder.

    Neither needs a transaction around them: the insert alone decides, and a
    holder that is gone by the read only means trying the insert again.
    """

    __slots__ = ()


def create_unique_jobs(kind: str, jobs: Sequence[NewJob], now: str) -> CreateUniqueJobs:
    """The write that stores jobs of kind, each unless its unique key is held."""
    return CreateUniqueJob(kind, jobs, now) if len(jobs) == 1 else CreateUniqueJobs(kind, jobs, now)


def keyed_unique(
    where: str, unique: Unique, jobs: Sequence[NewJob], moment: datetime.datetime
) -> list[NewJob]:
    """jobs with the unique key and statuses unique gives each at moment."""
    return [
        job._replace(
            unique_key=unique.key_of(where, job.payload, moment), unique_statuses=unique.mask
        )
        for job in jobs
    ]


def _holder(q: Queries, kind: str, job: NewJob, now: str) -> EnqueueResult:
    """The result of job, whose insert found its key held: the holder, or job stored after all."""
    if job.unique_key is None:
        raise ValueError(f"enqueue {kind!r}: a unique job without a key")
    for _ in range(_TRIES):
        holder = q.get_unique_holder(kind=kind, unique_key=job.unique_key)
        if holder is not None:
            return EnqueueResult(holder, duplicate=True)
        # The holder finished between the insert and the read; a fresh id
        # also covers the (astronomically unlikely) id that was taken.
        job = job._replace(id=new_id())
        if q.insert_unique_jobs(kind=kind, jobs=[job], now=now) == [True]:
            return EnqueueResult(job.id, duplicate=False)
    raise StoreError(
        f"enqueue {kind!r}: the unique key changed hands {_TRIES} times during one enqueue"
    )


def kept_jobs(jobs: list[NewJob], results: list[EnqueueResult] | None) -> list[NewJob]:
    """The jobs a write with results stored: all, or those not a duplicate when unique."""
    if results is None:
        return jobs
    return [job for job, done in zip(jobs, results, strict=True) if not done.duplicate]


def ids_of(jobs: list[NewJob], results: list[EnqueueResult] | None) -> list[str]:
    """The ids an enqueue returns, in order: the jobs', or when unique each result's."""
    return [job.id for job in (jobs if results is None else results)]


def results_of(jobs: list[NewJob], results: list[EnqueueResult] | None) -> list[EnqueueResult]:
    """The EnqueueResults of an enqueue, in order: results, or none a duplicate when not unique."""
    if results is None:
        return [EnqueueResult(job.id, False) for job in jobs]
    return results
