"""The PostgreSQL engine's dashboard queries (postgres/queries/dashboard.sql) in the seam's shape.

A base of the engine's ``Queries`` adapter, over the connection it holds;
nothing else imports it. Times go in and come out as the seam's UTC text.
"""

from collections.abc import Sequence

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.dashboard_queries import (
    DueRow,
    FinishedRow,
    KindNameRow,
    NeededRow,
    QueueNameRow,
    RunningQueueRow,
)
from jobtable._engines.postgres.ends import notify_ended, notify_released
from jobtable._engines.rows import RecordRow, seam_time, stored
from jobtable.db.postgres import dashboard


class PostgresDashboardQueries:
    """The generated dashboard Querier on the adapter's connection, in the seam's shape."""

    _conn: psycopg.Connection[TupleRow]

    @property
    def _dashboard(self) -> dashboard.Querier:
        return dashboard.Querier(self._conn)

    def list_kind_names(self) -> Sequence[KindNameRow]:
        return self._dashboard.list_kind_names()

    def list_queue_names(self) -> Sequence[QueueNameRow]:
        return self._dashboard.list_queue_names()

    def search_payloads(self, *, scan: int, text: str, max_jobs: int) -> Sequence[RecordRow]:
        rows = self._dashboard.search_payloads(scan=scan, text=text, max_jobs=max_jobs)
        return [stored(RecordRow, row) for row in rows]

    # A bulk cancel or delete notifies once (NotifyJobsEnded), naming no job,
    # so that the waits for the jobs it ended return at its commit; a bulk
    # cancel wakes the idle runners too, since a cancelled job no longer
    # holds a sequence that continues past it (notify_released).

    def cancel_queued_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        count = self._dashboard.cancel_queued_matching(
            now=seam_time(now), kind=kind, queue=queue, max_jobs=max_jobs
        )
        if count:
            notify_ended(self._conn)
            notify_released(self._conn)
        return count

    def cancel_pending_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        count = self._dashboard.cancel_pending_matching(
            now=seam_time(now), kind=kind, queue=queue, max_jobs=max_jobs
        )
        if count:
            notify_ended(self._conn)
            notify_released(self._conn)
        return count

    def request_cancel_matching(self, *, now: str, kind: str | None, queue: str | None) -> int:
        return self._dashboard.request_cancel_matching(now=seam_time(now), kind=kind, queue=queue)

    def delete_matching(
        self, *, status: str | None, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        count = self._dashboard.delete_matching(
            status=status, kind=kind, queue=queue, max_jobs=max_jobs
        )
        if count:
            notify_ended(self._conn)
        return count

    def list_needed_matching(
        self, *, status: str | None, kind: str | None, queue: str | None, max_jobs: int
    ) -> Sequence[NeededRow]:
        return self._dashboard.list_needed_matching(
            status=status, kind=kind, queue=queue, max_jobs=max_jobs
        )

    def finished_since(self, *, since: str, max_jobs: int) -> Sequence[FinishedRow]:
        rows = self._dashboard.finished_since(since=seam_time(since), max_jobs=max_jobs)
        return [stored(FinishedRow, row) for row in rows]

    def oldest_due_by_queue(self, *, now: str) -> Sequence[DueRow]:
        rows = self._dashboard.oldest_due_by_queue(now=seam_time(now))
        return [stored(DueRow, row) for row in rows]

    def list_running_queues(self) -> Sequence[RunningQueueRow]:
        return self._dashboard.list_running_queues()
