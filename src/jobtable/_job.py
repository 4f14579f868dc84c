"""The job record as the API reports it, and the texts the runner stores itself."""

import enum
from typing import Generic

import pydantic_core
from pydantic import BaseModel, ConfigDict, JsonValue
from typing_extensions import TypeVar

from ._engine import JobRow

ResultT = TypeVar("ResultT", default=JsonValue)

MESSAGE_INTERRUPTED = "interrupted by restart"
"""The error of a job that a runner left running when it stopped or died."""

MESSAGE_INTERNAL = "internal error"
"""The error of a job whose handler raised something other than Failure.

The exception is logged with its traceback, never stored.
"""


class Status(enum.StrEnum):
    """The state of a job. A job moves queued → running → succeeded or failed."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Job(BaseModel, Generic[ResultT]):
    """A job as an application reports it, e.g. from ``GET /api/v1/jobs/{id}``.

    ``result`` is the latest partial or final result, and is None until the
    handler publishes one. ``error`` is set only on a failed job. ``Job`` alone
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
        result=None if row.result is None else pydantic_core.from_json(row.result),
        error=row.error,
    )
