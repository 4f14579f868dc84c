"""The rows the seam carries: a new job going in, the jobs and counts coming out, an outcome.

The read rows are protocols, which each engine's generated row classes
satisfy, except the rows that carry times: those are values, which each
engine's adapter makes of its generated rows with ``stored``, the one place
a stored time becomes an aware UTC datetime. ``NewJob`` and ``Outcome`` are
values the runner builds. ``NewJob.fields`` is the one place a new job becomes the columns of
an insert, which every insert statement of every engine takes.
"""

import dataclasses
import datetime
import typing
from typing import NamedTuple, Protocol, TypedDict, TypeVar


class ClaimedRow(Protocol):
    """A job a claim marked running: what a worker needs to run it."""

    @property
    def seq(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def payload(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def priority(self) -> int: ...
    @property
    def traceparent(self) -> str | None:
        """The W3C trace context recorded at enqueue, or None."""
        ...

    @property
    def partition_key(self) -> str | None:
        """The job's partition key, or None."""
        ...

    @property
    def workflow_id(self) -> str | None:
        """The job's workflow, or None: its outcome then settles its dependents."""
        ...


class JobFields(TypedDict):
    """A new job as the columns every engine's insert statements take, times as UTC text."""

    id: str
    kind: str
    queue: str
    priority: int
    payload: str
    max_attempts: int
    timeout: float | None
    run_at: str
    now: str
    traceparent: str | None
    partition_key: str | None
    sequence_key: str | None
    sequence_blocks: bool
    tags: str
    meta: str | None


class NewJob(NamedTuple):
    """A job to store: its id, encoded payload, run_at as UTC text, and options.

    traceparent is the W3C trace context to record with it (None: none).
    unique_key and unique_statuses (a bitmask) make it unique among its
    kind's jobs (None: not unique); see ``jobtable.Unique``. partition_key
    is its key in its queue's partitions; sequence_key puts it in a
    sequence, which it holds back when it ends failed or cancelled if
    sequence_blocks (see ``jobtable.Sequence``). tags is a JSON array of
    its tags, meta its JSON object of metadata or None (see ``jobtable.Kind``).
    partition_by and sequence_by name the payload field that a workflow's
    job fed by its dependency's result takes its keys from when it is fed
    (None: its keys are known, or it has none).
    debounce_key makes it its kind's one pending job of that key until its
    first claim (None: not debounced); see ``jobtable.Debounce``.
    """

    id: str
    payload: str
    run_at: str
    queue: str = "default"
    priority: int = 0
    max_attempts: int = 1
    timeout: float | None = None
    traceparent: str | None = None
    unique_key: str | None = None
    unique_statuses: int | None = None
    partition_key: str | None = None
    sequence_key: str | None = None
    sequence_blocks: bool = False
    tags: str = "[]"
    meta: str | None = None
    partition_by: str | None = None
    sequence_by: str | None = None
    debounce_key: str | None = None

    def fields(self, kind: str, now: str) -> JobFields:
        """The job as the columns of an insert of kind at now (unique_* and debounce_key apart)."""
        return JobFields(
            id=self.id,
            kind=kind,
            queue=self.queue,
            priority=self.priority,
            payload=self.payload,
            max_attempts=self.max_attempts,
            timeout=self.timeout,
            run_at=self.run_at,
            now=now,
            traceparent=self.traceparent,
            partition_key=self.partition_key,
            sequence_key=self.sequence_key,
            sequence_blocks=self.sequence_blocks,
            tags=self.tags,
            meta=self.meta,
        )


class Outcome(NamedTuple):
    """How one attempt ends, as ``finish_and_claim_jobs`` stores it.

    state is the status the job moves to: ``succeeded`` (with result),
    ``failed`` (with error), ``queued`` (from run_at on; with error for a
    failed attempt, without for a retry the handler asked for) or
    ``cancelled``. workflow is set for a job of a workflow: its end then
    settles its dependents in the same transaction. run_trace is the W3C
    trace context of the attempt's run span (an instrumented store's, None
    otherwise), stored with an outcome that ends the job.
    """

    id: str
    attempt: int
    state: str
    result: str | None
    error: str | None
    run_at: str | None
    workflow: bool = False
    run_trace: str | None = None


class JobRow(Protocol):
    """A job as GetJob reads it; result is JSON text, error is set only when failed."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def result(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


class ProgressRow(JobRow, Protocol):
    """A job as GetJobProgress reads it: a JobRow, and how many partial results it published."""

    @property
    def published(self) -> int: ...


@dataclasses.dataclass(frozen=True, slots=True)
class RecordRow:
    """A job's whole row, as GetJobRecord and ListJobs read it, times as aware UTC datetimes."""

    seq: int
    id: str
    kind: str
    queue: str
    priority: int
    status: str
    payload: str
    result: str | None
    error: str | None
    errors: str
    runner: str | None
    attempt: int
    max_attempts: int
    timeout: float | None
    cancel_requested: int
    run_at: datetime.datetime
    created_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    tags: str
    meta: str | None


class CountRow(Protocol):
    """How many jobs of one queue have one status."""

    @property
    def queue(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def jobs(self) -> int: ...


@dataclasses.dataclass(frozen=True, slots=True)
class BacklogRow:
    """How many jobs wait in one queue, and the earliest run_at among them."""

    queue: str
    jobs: int
    oldest_run_at: datetime.datetime


class HeldRow(Protocol):
    """A running job's id and the attempt of the claim that holds it."""

    @property
    def id(self) -> str: ...
    @property
    def attempt(self) -> int: ...


class LabelsRow(Protocol):
    """A job's tags (a JSON array) and metadata (a JSON object, or None), as stored."""

    @property
    def tags(self) -> str: ...
    @property
    def meta(self) -> str | None: ...


_Row = TypeVar("_Row")


_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields(into: type) -> tuple[tuple[str, bool], ...]:
    """into's fields in order, each with whether it holds a time (computed once per class)."""
    fields = _FIELDS.get(into)
    if fields is None:
        hints = typing.get_type_hints(into)
        names = getattr(into, "_fields", None) or [f.name for f in dataclasses.fields(into)]
        timed = (datetime.datetime, datetime.datetime | None)
        fields = _FIELDS[into] = tuple((name, hints[name] in timed) for name in names)
    return fields


def stored_time(value: datetime.datetime | str) -> datetime.datetime:
    """A time as an engine stores it (a datetime, or SQLite's UTC text) as an aware datetime.

    Raises ValueError for text that is no ISO 8601 time.
    """
    if isinstance(value, datetime.datetime):
        return value
    moment = datetime.datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)


def stored(into: type[_Row], row: object) -> _Row:
    """The seam's row into (a dataclass or NamedTuple) made of an engine's generated row.

    Takes each of into's fields from the attribute of row of that name; a
    time is made an aware datetime by ``stored_time``, whichever way the
    engine stores it.
    """
    values: dict[str, object] = {}
    for name, timed in _fields(into):
        value = getattr(row, name)
        values[name] = stored_time(value) if timed and value is not None else value
    return into(**values)


def seam_time(text: str) -> datetime.datetime:
    """The seam's UTC text (from ``jobtable._values.now()``) as an aware datetime.

    Raises ValueError for text that is no ISO 8601 time, or has no zone: a
    naive time would be read in the server's time zone on PostgreSQL.
    """
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"time {text!r} has no zone: want UTC text from jobtable._values.now()")
    return moment
