"""The seam's queries for jobs' steps (queries/steps.sql): recorded once, read by later attempts.

``jobtable._engines.base.Queries`` includes these; each engine's adapter has
them. Times go in as UTC text and come out as aware UTC datetimes.
"""

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Protocol

from jobtable._engines.rows import stored


class StepOutputRow(Protocol):
    """A recorded step's output: JSON text written from typed data, like a result."""

    @property
    def output(self) -> str: ...


@dataclasses.dataclass(frozen=True, slots=True)
class StepRow:
    """A recorded step of a job: its name, output, time and the attempt that recorded it."""

    name: str
    output: str
    recorded_at: datetime.datetime
    attempt: int


class StepQueries(Protocol):
    """The queries of queries/steps.sql, named as there."""

    def record_job_step(self, *, name: str, output: str, now: str, id: str, attempt: int) -> int:
        """Records step name of job id while the claim of attempt holds; returns rows added.

        0 when the job is not running under that claim, or already has the step.
        """
        ...

    def get_job_step(self, *, job_id: str, name: str) -> StepOutputRow | None:
        """The output of job_id's step name, or None when it has not been recorded."""
        ...

    def list_job_steps(self, *, job_id: str) -> Sequence[StepRow]:
        """Every recorded step of job_id, in the order recorded."""
        ...


class StepStatements(Protocol):
    """The statements of queries/steps.sql that both engines' generated Queriers share."""

    def get_job_step(self, *, job_id: str, name: str) -> StepOutputRow | None: ...

    def list_job_steps(self, *, job_id: str) -> Sequence[object]: ...


class CommonStepQueries:
    """The seam's step reads, alike on both engines, over ``_steps``.

    Each engine's adapter derives from it and sets ``_steps`` to its
    generated steps Querier; recording a step stays with it.
    """

    _steps: StepStatements

    def get_job_step(self, *, job_id: str, name: str) -> StepOutputRow | None:
        return self._steps.get_job_step(job_id=job_id, name=name)

    def list_job_steps(self, *, job_id: str) -> Sequence[StepRow]:
        return [stored(StepRow, row) for row in self._steps.list_job_steps(job_id=job_id)]
