"""The SQLite engine's dashboard queries (queries/dashboard.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import sqlite3
from collections.abc import Sequence

from jobtable._engines.dashboard_queries import (
    DueRow,
    FinishedRow,
    KindNameRow,
    NeededRow,
    QueueNameRow,
    RunningQueueRow,
)
from jobtable._engines.rows import RecordRow, stored
from jobtable.db.sqlite import dashboard


class SQLiteDashboardQueries:
    """The generated dashboard Querier on one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._dash = dashboard.Querier(conn)

    def cancel_pending_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        return self._dash.cancel_pending_matching(
            now=now, kind=kind, queue=queue, max_jobs=max_jobs
        )

    def cancel_queued_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        return self._dash.cancel_queued_matching(now=now, kind=kind, queue=queue, max_jobs=max_jobs)

    def delete_matching(
        self, *, status: str | None, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        return self._dash.delete_matching(status=status, kind=kind, queue=queue, max_jobs=max_jobs)

    def finished_since(self, *, since: str, max_jobs: int) -> Sequence[FinishedRow]:
        rows = self._dash.finished_since(since=since, max_jobs=max_jobs)
        return [stored(FinishedRow, row) for row in rows]

    def list_kind_names(self) -> Sequence[KindNameRow]:
        return self._dash.list_kind_names()

    def list_needed_matching(
        self, *, status: str | None, kind: str | None, queue: str | None, max_jobs: int
    ) -> Sequence[NeededRow]:
        return self._dash.list_needed_matching(
            status=status, kind=kind, queue=queue, max_jobs=max_jobs
        )

    def list_queue_names(self) -> Sequence[QueueNameRow]:
        return self._dash.list_queue_names()

    def list_running_queues(self) -> Sequence[RunningQueueRow]:
        return self._dash.list_running_queues()

    def oldest_due_by_queue(self, *, now: str) -> Sequence[DueRow]:
        return [stored(DueRow, row) for row in self._dash.oldest_due_by_queue(now=now)]

    def request_cancel_matching(self, *, now: str, kind: str | None, queue: str | None) -> int:
        return self._dash.request_cancel_matching(now=now, kind=kind, queue=queue)

    def search_payloads(self, *, scan: int, text: str, max_jobs: int) -> Sequence[RecordRow]:
        rows = self._dash.search_payloads(scan=scan, text=text, max_jobs=max_jobs)
        return [stored(RecordRow, row) for row in rows]
