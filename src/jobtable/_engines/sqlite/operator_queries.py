"""The SQLite engine's operator queries (queries/admin.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import datetime
import sqlite3
from collections.abc import Sequence

from jobtable._engines.operator_queries import (
    HeldJobRow,
    ListedRunnerRow,
    MinuteRow,
    SealedRow,
    StatsRow,
)
from jobtable._values import timestamp
from jobtable.db.sqlite import admin


class SQLiteOperatorQueries:
    """The generated admin Querier, with the lease cutoff taken from the caller's clock."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._admin = admin.Querier(conn)

    def list_runners(self, *, now: str, lease: float) -> Sequence[ListedRunnerRow]:
        cutoff = datetime.datetime.fromisoformat(now) - datetime.timedelta(seconds=lease)
        return self._admin.list_runners(cutoff=timestamp(cutoff))

    def failed_workflow_jobs(self, *, kind: str | None, queue: str | None) -> list[str]:
        return [row.id for row in self._admin.list_failed_workflow_jobs(kind=kind, queue=queue)]

    def wake_runners(self) -> None:
        """Does nothing: every commit to the file wakes the runners watching it."""

    def delete_job(self, *, id: str) -> int:
        return self._admin.delete_job(id=id)

    def finished_per_minute(self, *, since: str) -> Sequence[MinuteRow]:
        return self._admin.finished_per_minute(since=since)

    def job_stats(self, *, now: str) -> Sequence[StatsRow]:
        return self._admin.job_stats(now=now)

    def list_held_jobs(self) -> Sequence[HeldJobRow]:
        return self._admin.list_held_jobs()

    def list_sealed_jobs(self, *, after_seq: int, max_jobs: int) -> Sequence[SealedRow]:
        return self._admin.list_sealed_jobs(after_seq=after_seq, max_jobs=max_jobs)

    def requeue_failed_jobs(self, *, now: str, kind: str | None, queue: str | None) -> int:
        return self._admin.requeue_failed_jobs(now=now, kind=kind, queue=queue)

    def requeue_job(self, *, now: str, id: str) -> int:
        return self._admin.requeue_job(now=now, id=id)

    def reseal_job(
        self,
        *,
        new_payload: str,
        new_result: str | None,
        id: str,
        old_payload: str,
        old_result: str | None,
    ) -> int:
        return self._admin.reseal_job(
            new_payload=new_payload,
            new_result=new_result,
            id=id,
            old_payload=old_payload,
            old_result=old_result,
        )
