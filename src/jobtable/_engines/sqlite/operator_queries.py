"""The SQLite engine's operator queries (queries/admin.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it.
"""

import datetime
from collections.abc import Sequence

from jobtable._engines.operator_queries import ListedRunnerRow
from jobtable._values import timestamp
from jobtable.db.sqlite import admin


class SQLiteOperatorQueries(admin.Querier):
    """The generated admin Querier, with the lease cutoff taken from the caller's clock."""

    def list_runners(  # type: ignore[override]
        self, *, now: str, lease: float
    ) -> Sequence[ListedRunnerRow]:
        cutoff = datetime.datetime.fromisoformat(now) - datetime.timedelta(seconds=lease)
        return super().list_runners(cutoff=timestamp(cutoff))

    def failed_workflow_jobs(self, *, kind: str | None, queue: str | None) -> list[str]:
        return [row.id for row in self.list_failed_workflow_jobs(kind=kind, queue=queue)]

    def wake_runners(self) -> None:
        """Does nothing: every commit to the file wakes the runners watching it."""
