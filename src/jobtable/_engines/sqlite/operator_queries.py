"""The SQLite engine's operator queries (queries/admin.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import datetime
import sqlite3
from collections.abc import Sequence

from jobtable._engines.operator_queries import (
    CommonOperatorQueries,
    ListedRunnerRow,
    MinuteRow,
    StatsRow,
)
from jobtable._engines.rows import seam_time, stored
from jobtable._values import timestamp
from jobtable.db.sqlite import admin


class SQLiteOperatorQueries(CommonOperatorQueries):
    """The generated admin Querier, with the lease cutoff taken from the caller's clock."""

    _admin: admin.Querier

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._admin = admin.Querier(conn)

    def list_runners(self, *, now: str, lease: float) -> Sequence[ListedRunnerRow]:
        cutoff = seam_time(now) - datetime.timedelta(seconds=lease)
        rows = self._admin.list_runners(cutoff=timestamp(cutoff))
        return [stored(ListedRunnerRow, r) for r in rows]

    def wake_runners(self) -> None:
        """Does nothing: every commit to the file wakes the runners watching it."""

    def finished_per_minute(self, *, since: str) -> Sequence[MinuteRow]:
        return [stored(MinuteRow, r) for r in self._admin.finished_per_minute(since=since)]

    def job_stats(self, *, now: str) -> Sequence[StatsRow]:
        return [stored(StatsRow, r) for r in self._admin.job_stats(now=now)]

    def requeue_failed_jobs(self, *, now: str, kind: str | None, queue: str | None) -> int:
        return self._admin.requeue_failed_jobs(now=now, kind=kind, queue=queue)

    def requeue_job(self, *, now: str, id: str) -> int:
        return self._admin.requeue_job(now=now, id=id)
