"""The SQLite engine's step queries (queries/steps.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import sqlite3

from jobtable._engines.step_queries import CommonStepQueries
from jobtable.db.sqlite import steps


class SQLiteStepQueries(CommonStepQueries):
    """The generated steps Querier on one connection."""

    _steps: steps.Querier

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._steps = steps.Querier(conn)

    def record_job_step(self, *, name: str, output: str, now: str, id: str, attempt: int) -> int:
        return self._steps.record_job_step(
            name=name, output=output, now=now, id=id, attempt=attempt
        )
