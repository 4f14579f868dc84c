"""Flow control's declarations: queues' limits, rates, and a job's partition and sequence keys.

The database enforces every limit inside the claim (queries/flow.sql); this
module only checks what code declares and computes the keys a job is stored
with. A bad value raises an error naming it, before anything is stored.
"""

import dataclasses
import datetime
import enum
import json
import math
from collections.abc import Callable
from typing import Any, Literal

from jobtable._codec import Codec
from jobtable._engines.flow import QueueLimits, WaitFacts
from jobtable._engines.rows import NewJob
from jobtable._values import unstorable

_INT32 = 1 << 31


def _check_limit(where: str, name: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: {name} must be an int or None, got {value!r}")
    if not 1 <= value < _INT32:
        raise ValueError(f"{where}: {name} must be at least 1, got {value}")


def check_queue_name(where: str, name: object) -> str:
    """name, checked as a queue's name; raises ValueError naming where."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: a queue name must be a non-empty str, got {name!r}")
    if why := unstorable(name):
        raise ValueError(f"{where}: queue {name!r} cannot be stored: {why}")
    return name


@dataclasses.dataclass(frozen=True, slots=True)
class Rate:
    """At most ``limit`` jobs of a queue start in any window of ``per``.

    Counted by the database, on its clock, inside each claim: every attempt
    that starts counts, whatever its outcome, and the runners of every
    machine together keep to it.

    Args:
        limit: How many jobs may start per window, 1 or more.
        per: The window, a positive timedelta.
        per_key: The limit holds for each partition key apart (see ``Queue``).

    Raises:
        ValueError: A limit below 1, or a period that is not a positive
            timedelta.
        TypeError: per_key is not a bool.
    """

    limit: int
    per: datetime.timedelta
    per_key: bool = False

    def __post_init__(self) -> None:
        _check_limit("Rate", "limit", self.limit)
        if self.limit is None:
            raise ValueError("Rate: limit must be an int of 1 or more, got None")
        if not isinstance(self.per, datetime.timedelta) or self.per <= datetime.timedelta(0):
            raise ValueError(f"Rate: per must be a positive timedelta, got {self.per!r}")
        if not isinstance(self.per_key, bool):
            raise TypeError(f"Rate: per_key must be a bool, got {self.per_key!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class Queue:
    """A queue's flow control as code declares it, to pass to ``Runner(flow=...)``.

    A starting runner writes the declaration to the database, where claims
    read it; an operator's limits (``Store.set_limits``) win over it until
    cleared. None is no limit.

    Args:
        name: The queue's name.
        concurrency: At most that many jobs of the queue run at once, across
            every runner of every machine (beside each runner's own slots).
        partition_limit: At most that many of one partition key (see
            ``Partition``; the jobs without a key count as one key).
        rate: How many of its jobs may start per window.

    Raises:
        TypeError: A limit or rate of the wrong type.
        ValueError: A bad name or a limit below 1.
    """

    name: str
    concurrency: int | None = None
    partition_limit: int | None = None
    rate: Rate | None = None

    def __post_init__(self) -> None:
        check_queue_name("Queue", self.name)
        where = f"Queue {self.name!r}"
        _check_limit(where, "concurrency", self.concurrency)
        _check_limit(where, "partition_limit", self.partition_limit)
        if self.rate is not None and not isinstance(self.rate, Rate):
            raise TypeError(f"{where}: rate must be a jobtable.Rate or None, got {self.rate!r}")

    @property
    def limits(self) -> QueueLimits:
        """The limits as the queues table stores them."""
        return limits_of(self.concurrency, self.partition_limit, self.rate)


def limits_of(
    concurrency: int | None, partition_limit: int | None, rate: Rate | None
) -> QueueLimits:
    """The stored form of limits, which ``Queue`` or ``Store.set_limits`` checked."""
    if rate is None:
        return QueueLimits(concurrency, partition_limit)
    period = rate.per.total_seconds()
    if not math.isfinite(period) or period <= 0:
        raise ValueError(f"Rate: per must be a positive timedelta, got {rate.per!r}")
    return QueueLimits(concurrency, partition_limit, rate.limit, period, rate.per_key)


KeyFunction = Callable[[Any], str]
"""A function of a job's typed payload that returns its key, a str."""


def _check_by(where: str, by: object) -> None:
    if isinstance(by, str):
        if not by:
            raise ValueError(f"{where}: by must be a payload field name or a function, got ''")
        return
    if not callable(by):
        raise TypeError(f"{where}: by must be a payload field name or a function, got {by!r}")


def _key(where: str, what: str, by: str | KeyFunction, payload: object, encoded: str) -> str:
    """The key by computes for a job, checked as storable."""
    if isinstance(by, str):
        value = json.loads(encoded)
        if not isinstance(value, dict) or by not in value:
            raise ValueError(f"{where}: {what} field {by!r} is not in the payload")
        field = value[by]
        key = field if isinstance(field, str) else json.dumps(field, sort_keys=True)
    else:
        try:
            key = by(payload)
        except Exception as err:
            raise ValueError(f"{where}: the {what} function raised {type(err).__name__}") from err
        if not isinstance(key, str):
            raise TypeError(f"{where}: the {what} function must return a str, got {key!r}")
    return check_key(where, what, key)


def check_key(where: str, what: str, key: object) -> str:
    """key, checked as a partition or sequence key: a non-empty, storable str."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"{where}: a {what} key must be a non-empty str, got {key!r}")
    if why := unstorable(key):
        raise ValueError(f"{where}: the {what} key {key!r} cannot be stored: {why}")
    return key


@dataclasses.dataclass(frozen=True, slots=True)
class Partition:
    """How a kind's jobs get their partition key: ``by`` a payload field's name, or a function.

    A function gets the typed payload and returns a str. The key is stored
    with the job at enqueue; an enqueue may give ``partition_key=`` instead.
    A workflow's job fed by its dependency's result gets a field's key when
    that result feeds it (a function's cannot run then: give the key). A
    field that holds a secret is refused when the kind is declared.
    A queue's ``partition_limit`` and a per-key ``Rate`` count by it. A
    field that the kind's payload type lacks is refused when the kind is
    declared (for a type that fixes its fields); an enqueue whose field is
    missing, whose function raises or returns no str,
    or whose key holds a NUL raises and stores nothing.

    Args:
        by: A payload field's name, or a function of the typed payload
            returning the key.

    Raises:
        TypeError: by is neither a str nor a function.
        ValueError: by is an empty name.
    """

    by: str | KeyFunction

    def __post_init__(self) -> None:
        _check_by("Partition", self.by)


@dataclasses.dataclass(frozen=True, slots=True)
class Sequence:
    """Puts a kind's jobs in sequences: jobs of one key run one at a time, in enqueue order.

    An enqueue may give ``sequence_key=`` instead of the key ``by`` computes.
    A job waits, queued, while an earlier job of its sequence is pending (a
    workflow's, waiting for its dependencies), queued (a retry keeps its
    place) or running. A workflow's job fed by its dependency's result and
    keyed by a field joins its sequence when that result feeds it: behind the
    jobs of its key that exist then.

    Args:
        by: A payload field's name or a function of the typed payload that
            returns the key. None puts the kind's jobs in one sequence, keyed
            by the kind's name, but for those an enqueue gives a
            ``sequence_key=``.
        on_failure: What a job that ends failed or cancelled does to the jobs
            behind it: ``"block"`` (the default) holds them until an operator
            retries it (it runs again, in its place) or deletes it;
            ``"continue"`` lets the next one run.

    Raises:
        TypeError: by is neither a str nor a function.
        ValueError: A bad on_failure, or by an empty name.
    """

    by: str | KeyFunction | None = None
    on_failure: Literal["block", "continue"] = "block"

    def __post_init__(self) -> None:
        if self.by is not None:
            _check_by("Sequence", self.by)
        if self.on_failure not in ("block", "continue"):
            raise ValueError(
                f"Sequence: on_failure must be 'block' or 'continue', got {self.on_failure!r}"
            )


@dataclasses.dataclass(frozen=True, slots=True)
class _KindWide:
    """The key of a kind-wide sequence: the kind's name, whatever the payload."""

    kind: str

    def __call__(self, payload: object) -> str:
        return self.kind


def check_flow(
    where: str, codec: "Codec[Any, Any]", partition: object, sequence: object
) -> tuple[Partition | None, Sequence | None]:
    """A kind's partition and sequence, checked, as its enqueues apply them.

    Raises TypeError naming where for a value of the wrong type, and
    ValueError for a ``by`` field that the payload type does not have (when
    its type fixes its fields), so the mistake shows when the kind is made,
    not at each enqueue. A ``Sequence`` without ``by`` comes back keyed by
    the kind's name.
    """
    if partition is not None and not isinstance(partition, Partition):
        raise TypeError(
            f"{where}: partition must be a jobtable.Partition or None, got {partition!r}"
        )
    if sequence is not None and not isinstance(sequence, Sequence):
        raise TypeError(f"{where}: sequence must be a jobtable.Sequence or None, got {sequence!r}")
    if partition is not None and isinstance(partition.by, str):
        codec.check_field(where, "partition", partition.by)
        codec.check_not_secret(where, "partition", partition.by)
    if sequence is not None and isinstance(sequence.by, str):
        codec.check_field(where, "sequence", sequence.by)
        codec.check_not_secret(where, "sequence", sequence.by)
    if sequence is not None and sequence.by is None:
        sequence = dataclasses.replace(sequence, by=_KindWide(codec.kind))
    return partition, sequence


FLOW_OPTIONS = frozenset({"partition_key", "sequence_key"})
"""The enqueue options of flow control; the others are ``Options``'."""


def fed_field(where: str, what: str, by: object, key: object) -> str | None:
    """The payload field a fed job's what key comes from once it is fed; None: known now.

    A fed job's payload is its dependency's result, unknown until that
    succeeds, so a key by a field is computed by the statement that feeds
    it; a key given (key) or a kind-wide sequence's needs no payload. Raises
    ValueError naming where for a key function, which only the enqueuing
    process could run.
    """
    if key is not None or by is None or isinstance(by, _KindWide):
        return None
    if isinstance(by, str):
        return by
    raise ValueError(
        f"{where}: the kind's {what.capitalize()} computes the key with a function of the "
        f"payload, which a fed node gets only when its dependency succeeds; key it by a "
        f"payload field's name ({what.capitalize()}(by='field')), whose key is computed when "
        f"the node is fed, or give {what}_key= to add"
    )


def with_flow(
    where: str,
    jobs: list[NewJob],
    payloads: list[Any],
    flow: tuple[Partition | None, Sequence | None],
    given: dict[str, Any],
    fed: bool = False,
) -> list[NewJob]:
    """jobs with their partition and sequence keys: given's, else those of the kind's flow.

    fed: the jobs are a workflow's fed nodes, whose payload is not known
    yet; a key by a payload field is stored as the field's name instead
    (``fed_field``), computed when the job is fed.
    """
    partition, sequence = flow
    partition_key = given.get("partition_key")
    sequence_key = given.get("sequence_key")
    if partition_key is not None:
        check_key(where, "partition", partition_key)
    if sequence_key is not None:
        check_key(where, "sequence", sequence_key)
    blocks = sequence is None or sequence.on_failure == "block"
    partition_by = sequence_by = None
    if fed:
        partition_by = fed_field(where, "partition", partition and partition.by, partition_key)
        sequence_by = fed_field(where, "sequence", sequence and sequence.by, sequence_key)
    done = []
    for job, payload in zip(jobs, payloads, strict=True):
        pkey = partition_key
        if pkey is None and partition is not None and partition_by is None:
            pkey = _key(where, "partition", partition.by, payload, job.payload)
        skey = sequence_key
        if skey is None and sequence is not None and sequence.by is not None and not sequence_by:
            skey = _key(where, "sequence", sequence.by, payload, job.payload)
        done.append(
            job._replace(
                partition_key=pkey,
                sequence_key=skey,
                sequence_blocks=(skey is not None or sequence_by is not None) and blocks,
                partition_by=partition_by,
                sequence_by=sequence_by,
            )
        )
    return done


class WaitReason(enum.StrEnum):
    """Why a queued job whose run_at has come is not running yet: its flow control.

    ``text`` says it in words for an operator: ``jobtable jobs show`` and the
    dashboard's job page both print it.
    """

    PAUSED = "paused"
    """Its queue is paused."""
    SEQUENCE = "sequence"
    """An earlier job of its sequence has not ended (pending, queued, running) or blocks it."""
    CONCURRENCY = "concurrency"
    """Its queue runs as many jobs as its concurrency limit allows."""
    PARTITION = "partition"
    """Its partition key runs as many jobs as the queue's partition limit allows."""
    RATE = "rate"
    """Its queue (or its key, with a per-key rate) started its rate's jobs this period."""

    @property
    def text(self) -> str:
        """The reason as one phrase an operator reads, such as ``its queue is paused``."""
        return _WAIT_TEXTS[self]


_WAIT_TEXTS = {
    WaitReason.PAUSED: "its queue is paused",
    WaitReason.SEQUENCE: "an earlier job of its sequence has not ended, or ended and blocks it",
    WaitReason.CONCURRENCY: "its queue is at its concurrency limit",
    WaitReason.PARTITION: "its partition key is at the queue's partition limit",
    WaitReason.RATE: "its queue (or key) started as many jobs as its rate allows for now",
}


def wait_reason(facts: WaitFacts | None) -> WaitReason | None:
    """The first reason facts give for a queued job to wait; None: nothing holds it."""
    if facts is None:
        return None
    limits = facts.limits
    if facts.paused:
        return WaitReason.PAUSED
    if facts.behind_sequence:
        return WaitReason.SEQUENCE
    if limits.concurrency is not None and facts.running >= limits.concurrency:
        return WaitReason.CONCURRENCY
    if limits.partition_limit is not None and facts.running_in_key >= limits.partition_limit:
        return WaitReason.PARTITION
    starts = facts.starts_in_key if limits.rate_per_key else facts.starts
    if limits.rate_limit is not None and starts >= limits.rate_limit:
        return WaitReason.RATE
    return None
