"""The SQLite engine's step queries (queries/steps.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import sqlite3
from collections.abc import Sequence

from jobtable._engines.rows import stored
from jobtable._engines.step_queries import StepOutputRow, StepRow
from jobtable.db.sqlite import steps


class SQLiteStepQueries:
    """The generated steps Querier on one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._steps = steps.Querier(conn)

    def get_job_step(self, *, job_id: str, name: str) -> StepOutputRow | None:
        return self._steps.get_job_step(job_id=job_id, name=name)

    def list_job_steps(self, *, job_id: str) -> Sequence[StepRow]:
        return [stored(StepRow, row) for row in self._steps.list_job_steps(job_id=job_id)]

    def record_job_step(self, *, name: str, output: str, now: str, id: str, attempt: int) -> int:
        return self._steps.record_job_step(
            name=name, output=output, now=now, id=id, attempt=attempt
        )
