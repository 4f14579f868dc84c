"""The job record as the API reports it, and the texts the runner stores itself."""

import datetime
import enum
from collections.abc import Sequence
from typing import Generic

import pydantic_core
from pydantic import BaseModel, ConfigDict, JsonValue
from typing_extensions import TypeVar

from jobtable._engines.rows import JobRow, RecordRow
from jobtable._engines.step_queries import StepRow
from jobtable._flow import WaitReason
from jobtable._secrets import masked

ResultT = TypeVar("ResultT", default=JsonValue)

MESSAGE_INTERRUPTED = "interrupted by restart"
"""The error of a job that a runner left running when it stopped or died."""

MESSAGE_INTERNAL = "internal error"
"""The error of a job whose handler raised something other than Failure.

The exception is logged with its traceback, never stored.
"""


MESSAGE_TIMED_OUT = "timed out"
"""The error of an attempt that ran past its kind's timeout."""


MESSAGE_PAYLOAD_MISMATCH = "payload no longer matches the kind's payload type"
"""The error of a job whose stored payload no longer validates as its kind's payload type.

The type changed since the job was enqueued (a required field added, a
field's type changed). It is final: another attempt would read the same
payload. pydantic's account, which may quote the payload, is logged, never
stored.
"""


class Status(enum.StrEnum):
    """The state of a job.

    A job moves queued → running → succeeded, failed or cancelled; an attempt
    that fails while attempts remain moves it back to queued. A job of a
    workflow is pending until its dependencies let it run (see ``Workflow``).
    """

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PENDING = "pending"


class CancelResult(enum.StrEnum):
    """What ``Store.cancel`` did."""

    CANCELLED = "cancelled"
    """The job was queued and is now cancelled: no handler will run it."""
    REQUESTED = "requested"
    """The job is running: its runner cancels the handler within about a second."""
    FINISHED = "finished"
    """The job had already finished (or been cancelled); nothing changed."""


class Job(BaseModel, Generic[ResultT]):
    """A job as an application reports it, e.g. from ``GET /api/v1/jobs/{id}``.

    ``result`` is the latest partial or final result, and is None until the
    handler publishes one; a secret in it shows as ``"**********"``. ``error``
    is set only on a failed job. ``Job`` alone
    holds the result as plain JSON data; ``Job[R]``, from ``Kind.get``, holds
    it parsed as the kind's result type. ``model_dump_json()`` gives exactly
    the shape of the Job struct in shared/reference/jobs.go: id, kind,
    status, result, error.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    status: Status
    result: ResultT | None
    error: str | None


def job_from_row(row: JobRow) -> Job:
    """Returns the API's Job for a row, its result as plain JSON data."""
    return Job(
        id=row.id,
        kind=row.kind,
        status=Status(row.status),
        result=None if row.result is None else _shown(row.result),
        error=row.error,
    )


def _shown(text: str) -> JsonValue:
    """Stored JSON text as plain data, each encrypted secret shown as ``"**********"``."""
    return masked(pydantic_core.from_json(text), text)  # type: ignore[no-any-return]


class AttemptError(BaseModel):
    """One failed attempt in a job's history: its number, stored message and time."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    error: str
    at: datetime.datetime


class JobStep(BaseModel):
    """A recorded step of a job's handler (``JobContext.step``): run once, kept for later attempts.

    ``output`` is the stored JSON as plain data, each encrypted secret shown
    as ``"**********"``, like a result; ``attempt`` is the attempt that ran it.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    output: JsonValue
    recorded_at: datetime.datetime
    attempt: int


class JobRecord(BaseModel):
    """A job's whole record, for operators: ``Store.inspect`` and ``Store.list_jobs`` return it.

    ``payload`` and ``result`` are the stored JSON as plain data, each
    encrypted secret shown as ``"**********"`` (as pydantic dumps it). ``errors``
    holds the stored message of every failed attempt (never exception text).
    ``runner`` names the runner that claimed the job last. ``seq`` is the
    enqueue order; pass the last one of a page as ``before`` to get the next.
    ``tags`` and ``meta`` are what the job was enqueued with (see ``Kind``):
    ``meta`` as plain JSON, an empty object when it has none.
    """

    model_config = ConfigDict(frozen=True)

    seq: int
    id: str
    kind: str
    queue: str
    priority: int
    status: Status
    attempt: int
    max_attempts: int
    timeout: float | None
    cancel_requested: bool
    run_at: datetime.datetime
    created_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    runner: str | None
    errors: list[AttemptError]
    error: str | None
    payload: JsonValue
    result: JsonValue | None
    tags: list[str] = []
    meta: dict[str, JsonValue] = {}
    waiting: WaitReason | None = None
    """Why a queued job whose run_at came waits (``Store.inspect`` only; None in listings)."""
    steps: list[JobStep] = []
    """The job's recorded steps, oldest first (``Store.inspect`` only; empty in listings)."""

    workflow: "WorkflowLinks | None" = None
    """The job's workflow, dependencies and dependents (``Store.inspect`` only; None otherwise)."""

    @property
    def workflow_id(self) -> str | None:
        """The id of the job's workflow, None for a job of none (or a listing's record)."""
        return None if self.workflow is None else self.workflow.id

    @property
    def workflow_name(self) -> str | None:
        """The name of the job's workflow, None for a job of none (or a listing's record)."""
        return None if self.workflow is None else self.workflow.name

    @property
    def cancelled_because(self) -> str | None:
        """Why a dependency's end cancelled the job: ``"dependency <id> failed"``; else None.

        ``cancelled`` or ``deleted`` instead of ``failed`` as the dependency ended.
        """
        return None if self.workflow is None else self.workflow.cancelled_because

    @property
    def blocked_by(self) -> list[str]:
        """What refuses a retry of the job: its dependencies that failed, were cancelled or deleted.

        Each as ``"dependency <id> failed"`` (``cancelled``, ``deleted``); empty
        for a job that nothing blocks, or of no workflow, or a listing's record.
        """
        return [] if self.workflow is None else self.workflow.blocked_by


class LinkedJob(BaseModel):
    """A job at the other end of a dependency: its id, kind and status."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    status: Status


class WorkflowLinks(BaseModel):
    """A workflow job's place in its workflow, as ``Store.inspect`` reads it.

    ``dependencies`` are the jobs it waits for, ``dependents`` those that wait
    for it, each in enqueue order. ``cancelled_because`` says which
    dependency's end cancelled it, when one did (``"dependency <id>
    failed"``, ``cancelled`` or ``deleted``). ``blocked_by`` says, in the
    same words, each dependency it needs that failed, was cancelled or was
    deleted before it succeeded: while one does, ``Store.retry`` of it is
    refused (``RetryResult.BLOCKED``).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    dependencies: list[LinkedJob] = []
    dependents: list[LinkedJob] = []
    cancelled_because: str | None = None
    blocked_by: list[str] = []


JobRecord.model_rebuild()


def step_from_row(row: StepRow) -> JobStep:
    """Returns the JobStep of a recorded step's row."""
    return JobStep(
        name=row.name,
        output=_shown(row.output),
        recorded_at=row.recorded_at,
        attempt=row.attempt,
    )


def record_from_row(row: RecordRow) -> JobRecord:
    """Returns the JobRecord of a row."""
    return JobRecord(
        seq=row.seq,
        id=row.id,
        kind=row.kind,
        queue=row.queue,
        priority=row.priority,
        status=Status(row.status),
        attempt=row.attempt,
        max_attempts=row.max_attempts,
        timeout=row.timeout,
        cancel_requested=bool(row.cancel_requested),
        run_at=row.run_at,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        runner=row.runner,
        errors=pydantic_core.from_json(row.errors),
        error=row.error,
        payload=_shown(row.payload),
        result=None if row.result is None else _shown(row.result),
        tags=pydantic_core.from_json(row.tags),
        meta={} if row.meta is None else pydantic_core.from_json(row.meta),
    )


def inspected_record(
    row: RecordRow,
    waiting: WaitReason | None,
    steps: Sequence[StepRow],
    links: WorkflowLinks | None,
) -> JobRecord:
    """The record Store.inspect returns: why it waits, its recorded steps, its workflow links."""
    shown = [step_from_row(step) for step in steps]
    update = {"waiting": waiting, "steps": shown, "workflow": links}
    return record_from_row(row).model_copy(update=update)
