"""The PostgreSQL engine's step queries (postgres/queries/steps.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it. Times
go in and come out as the seam's UTC text.
"""

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.rows import seam_time
from jobtable._engines.step_queries import CommonStepQueries
from jobtable.db.postgres import steps


class PostgresStepQueries(CommonStepQueries):
    """The generated steps Querier with the seam's UTC text for times."""

    _steps: steps.Querier

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._steps = steps.Querier(conn)

    def record_job_step(self, *, name: str, output: str, now: str, id: str, attempt: int) -> int:
        return self._steps.record_job_step(
            name=name, output=output, now=seam_time(now), id=id, attempt=attempt
        )
