"""The PostgreSQL engine's step queries (postgres/queries/steps.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it. Times
go in and come out as the seam's UTC text.
"""

from collections.abc import Sequence

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.rows import seam_time, stored
from jobtable._engines.step_queries import StepOutputRow, StepRow
from jobtable.db.postgres import steps


class PostgresStepQueries:
    """The generated steps Querier with the seam's UTC text for times."""

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._steps = steps.Querier(conn)

    def record_job_step(self, *, name: str, output: str, now: str, id: str, attempt: int) -> int:
        return self._steps.record_job_step(
            name=name, output=output, now=seam_time(now), id=id, attempt=attempt
        )

    def get_job_step(self, *, job_id: str, name: str) -> StepOutputRow | None:
        return self._steps.get_job_step(job_id=job_id, name=name)

    def list_job_steps(self, *, job_id: str) -> Sequence[StepRow]:
        return [stored(StepRow, row) for row in self._steps.list_job_steps(job_id=job_id)]
