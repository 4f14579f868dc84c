"""The SQLite engine's operator queries (queries/admin.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import datetime
from collections.abc import Sequence

from jobtable._engines.operator_queries import RunnerRow
from jobtable._values import timestamp
from jobtable.db.sqlite import admin


class SQLiteOperatorQueries(admin.Querier):
    """The generated admin Querier, with the lease cutoff taken from the caller's clock."""

    def list_runners(  # type: ignore[override]
        self, *, now: str, lease: float
    ) -> Sequence[RunnerRow]:
        cutoff = datetime.datetime.fromisoformat(now) - datetime.timedelta(seconds=lease)
        return super().list_runners(cutoff=timestamp(cutoff))

    def requeue_failed_jobs(  # type: ignore[override]
        self, *, now: str, kind: str | None, queue: str | None
    ) -> tuple[int, list[str]]:
        rows = super().requeue_failed_jobs(now=now, kind=kind, queue=queue)
        in_workflows = sorted((r.seq, r.id) for r in rows if r.workflow_id is not None)
        return len(rows), [job for _, job in in_workflows]

    def wake_runners(self) -> None:
        """Does nothing: every commit to the file wakes the runners watching it."""
