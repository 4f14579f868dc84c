"""The PostgreSQL engine's dashboard queries (postgres/queries/dashboard.sql) in the seam's shape.

A base of the engine's ``Queries`` adapter, over the connection it holds;
nothing else imports it. Times go in and come out as the seam's UTC text.
"""

import dataclasses
import datetime
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
from jobtable._engines.postgres.operator_queries import pg_time
from jobtable._engines.rows import RecordRow
from jobtable._values import timestamp
from jobtable.db.postgres import dashboard


def _text(moment: datetime.datetime | None) -> str | None:
    return None if moment is None else timestamp(moment)


@dataclasses.dataclass(frozen=True, slots=True)
class _Record:
    seq: int
    id: str
    kind: str
    queue: str
    priority: int
    status: str
    payload: str
    result: str | None
    error: str | None
    errors: str
    runner: str | None
    attempt: int
    max_attempts: int
    timeout: float | None
    cancel_requested: bool
    run_at: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    updated_at: str
    tags: str
    meta: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Finished:
    kind: str
    status: str
    run_at: str
    started_at: str | None
    finished_at: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Due:
    queue: str
    jobs: int
    oldest_run_at: str


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
        return [
            _Record(
                **{
                    **dataclasses.asdict(row),
                    "run_at": timestamp(row.run_at),
                    "created_at": timestamp(row.created_at),
                    "started_at": _text(row.started_at),
                    "finished_at": _text(row.finished_at),
                    "updated_at": timestamp(row.updated_at),
                }
            )
            for row in rows
        ]

    # A bulk cancel or delete notifies once (NotifyJobsEnded), naming no job,
    # so that the waits for the jobs it ended return at its commit; a bulk
    # cancel wakes the idle runners too, since a cancelled job no longer
    # holds a sequence that continues past it (notify_released).

    def cancel_queued_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        count = self._dashboard.cancel_queued_matching(
            now=pg_time(now), kind=kind, queue=queue, max_jobs=max_jobs
        )
        if count:
            notify_ended(self._conn)
            notify_released(self._conn)
        return count

    def cancel_pending_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int:
        count = self._dashboard.cancel_pending_matching(
            now=pg_time(now), kind=kind, queue=queue, max_jobs=max_jobs
        )
        if count:
            notify_ended(self._conn)
            notify_released(self._conn)
        return count

    def request_cancel_matching(self, *, now: str, kind: str | None, queue: str | None) -> int:
        return self._dashboard.request_cancel_matching(now=pg_time(now), kind=kind, queue=queue)

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
        return [
            _Finished(
                row.kind,
                row.status,
                timestamp(row.run_at),
                _text(row.started_at),
                timestamp(row.finished_at),
            )
            for row in self._dashboard.finished_since(since=pg_time(since), max_jobs=max_jobs)
        ]

    def oldest_due_by_queue(self, *, now: str) -> Sequence[DueRow]:
        return [
            _Due(row.queue, row.jobs, timestamp(row.oldest_run_at))
            for row in self._dashboard.oldest_due_by_queue(now=pg_time(now))
        ]

    def list_running_queues(self) -> Sequence[RunningQueueRow]:
        return self._dashboard.list_running_queues()
