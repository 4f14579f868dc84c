"""The PostgreSQL engine's operator queries (postgres/queries/admin.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it. Times
go in and come out as the seam's UTC text; the lease is measured by the
server's clock, so the ``now`` passed with it is not used.
"""

from collections.abc import Sequence

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.operator_queries import (
    CommonOperatorQueries,
    ListedRunnerRow,
    MinuteRow,
    StatsRow,
)
from jobtable._engines.rows import seam_time, stored
from jobtable.db.postgres import admin


class PostgresOperatorQueries(CommonOperatorQueries):
    """The generated admin Querier on conn, in the seam's shape."""

    _admin: admin.Querier

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._admin = admin.Querier(conn)

    def requeue_job(self, *, now: str, id: str) -> int:
        return self._admin.requeue_job(now=seam_time(now), id=id)

    def requeue_failed_jobs(self, *, now: str, kind: str | None, queue: str | None) -> int:
        return self._admin.requeue_failed_jobs(now=seam_time(now), kind=kind, queue=queue)

    def wake_runners(self) -> None:
        self._admin.wake_runners()

    def list_runners(self, *, now: str, lease: float) -> Sequence[ListedRunnerRow]:
        rows = self._admin.list_runners(lease_seconds=lease)
        return [stored(ListedRunnerRow, r) for r in rows]

    def job_stats(self, *, now: str) -> Sequence[StatsRow]:
        return [stored(StatsRow, r) for r in self._admin.job_stats(now=seam_time(now))]

    def finished_per_minute(self, *, since: str) -> Sequence[MinuteRow]:
        rows = self._admin.finished_per_minute(since=seam_time(since))
        return [stored(MinuteRow, r) for r in rows]
