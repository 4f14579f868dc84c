"""The Store's operations behind the dashboard: names, search, bulk actions, figures, health.

``Store`` inherits them, beside ``StoreOperations``; the dashboard calls them
as user code may. Each that touches the database has its ``a``-prefixed
async form.
"""

import asyncio
import datetime
from collections.abc import Callable, Iterable

from jobtable._engines.base import Engine
from jobtable._job import CancelResult, JobRecord, Status
from jobtable._operator.dashboard_models import BulkCancel, Health, KindReport
from jobtable._operator.dashboard_operations import (
    CancelMany,
    CancelMatching,
    DeleteMany,
    DeleteMatching,
    ListNames,
    ReadHealth,
    ReadKindFigures,
    SearchPayloads,
)
from jobtable._operator.models import DeleteResult
from jobtable._operator.operations import check_filter
from jobtable._values import checked_id, timestamp, unstorable

BULK_BATCH = 10_000
"""Jobs a bulk action by filter changes per transaction, so runners keep claiming meanwhile."""
MAX_IDS = 1000
MAX_SCAN = 100_000
MAX_SEARCH_TEXT = 200
_HOUR = datetime.timedelta(hours=1)


def _whole(label: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{label} must be an int from {low} to {high}, got {value!r}")
    return value


def _ids(label: str, job_ids: Iterable[str]) -> tuple[str, ...]:
    if isinstance(job_ids, str):
        raise TypeError(f"{label}: job_ids is a str, want an iterable of job ids")
    ids = tuple(checked_id(job_id) for job_id in dict.fromkeys(job_ids))
    if len(ids) > MAX_IDS:
        raise ValueError(f"{label}: at most {MAX_IDS} job ids at once, got {len(ids)}")
    return ids


def _search(text: str, scan: int, limit: int) -> SearchPayloads:
    if not isinstance(text, str):
        raise TypeError(f"search_payloads: text is {type(text).__name__}, want str")
    if not text or len(text) > MAX_SEARCH_TEXT or unstorable(text):
        raise ValueError(
            f"search_payloads: text must be 1 to {MAX_SEARCH_TEXT} storable characters"
        )
    return SearchPayloads(
        text,
        _whole("search_payloads: scan", scan, 1, MAX_SCAN),
        _whole("search_payloads: limit", limit, 1, 1000),
    )


def _status(status: Status | str | None) -> str | None:
    if status is None:
        return None
    try:
        return str(Status(status))
    except ValueError:
        choices = ", ".join(s.value for s in Status)
        raise ValueError(
            f"delete_matching: status must be one of {choices}, got {status!r}"
        ) from None


class DashboardOperations:
    """The dashboard's operations of ``Store``, which sets engine and clock."""

    engine: Engine
    clock: Callable[[], datetime.datetime]

    def kinds(self) -> list[str]:
        """Returns every kind some job has, in order.

        It reads one index entry per kind and status (a skip-scan), not every row,
        so it stays fast with millions of jobs of a few kinds.

        Returns:
            The kinds' names, sorted.
        """
        return self.engine.read(ListNames("kind"))

    async def akinds(self) -> list[str]:
        """The async form of kinds."""
        return await self.engine.aread(ListNames("kind"))

    def queue_names(self) -> list[str]:
        """Returns every queue some job is in, in order, read as kinds reads the kinds.

        ``queues`` lists the queues with their pauses, limits and counts.

        Returns:
            The queues' names, sorted.
        """
        return self.engine.read(ListNames("queue"))

    async def aqueue_names(self) -> list[str]:
        """The async form of queue_names."""
        return await self.engine.aread(ListNames("queue"))

    def search_payloads(self, text: str, *, scan: int = 10_000, limit: int = 50) -> list[JobRecord]:
        """Returns up to limit records, newest first, whose payload's JSON text holds text.

        The match ignores ASCII case (PostgreSQL: any case). It looks only at the
        scan most recent jobs, so its cost is bounded whatever the table's size:
        an older job is not found.

        Args:
            text: What to find, 1 to 200 characters.
            scan: How many of the most recent jobs to look at, at most 100,000.
            limit: At most this many records.

        Returns:
            The matching records, newest first.

        Raises:
            ValueError: text is empty, unstorable or too long, or scan or limit is
                out of range.
        """
        return self.engine.read(_search(text, scan, limit))

    async def asearch_payloads(
        self, text: str, *, scan: int = 10_000, limit: int = 50
    ) -> list[JobRecord]:
        """The async form of search_payloads."""
        return await self.engine.aread(_search(text, scan, limit))

    def cancel_many(self, job_ids: Iterable[str]) -> dict[str, CancelResult]:
        """Cancels each job as cancel does, in one transaction.

        Args:
            job_ids: At most 1000 job ids.

        Returns:
            Each job's result by id; ids no job has are left out.

        Raises:
            TypeError: job_ids is a str, or holds an id that is not a str; nothing
                changes.
            ValueError: More than 1000 ids; nothing changes.
        """
        return self.engine.write(CancelMany(_ids("cancel_many", job_ids), timestamp(self.clock())))

    async def acancel_many(self, job_ids: Iterable[str]) -> dict[str, CancelResult]:
        """The async form of cancel_many."""
        op = CancelMany(_ids("cancel_many", job_ids), timestamp(self.clock()))
        return await self.engine.awrite(op)

    def delete_many(self, job_ids: Iterable[str]) -> dict[str, DeleteResult]:
        """Deletes each job as delete does (running ones are kept), in one transaction.

        Args:
            job_ids: At most 1000 job ids.

        Returns:
            Each job's result by id; ids no job has are left out.

        Raises:
            TypeError: job_ids is a str, or holds an id that is not a str; nothing
                changes.
            ValueError: More than 1000 ids; nothing changes.
        """
        return self.engine.write(DeleteMany(_ids("delete_many", job_ids), timestamp(self.clock())))

    async def adelete_many(self, job_ids: Iterable[str]) -> dict[str, DeleteResult]:
        """The async form of delete_many."""
        return await self.engine.awrite(
            DeleteMany(_ids("delete_many", job_ids), timestamp(self.clock()))
        )

    def cancel_matching(
        self,
        *,
        status: Status | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> BulkCancel:
        """Cancels every queued or pending job of kind in queue; requests the running ones' cancel.

        What cancel does to each, in batches of 10,000 queued jobs, each its own
        transaction. The pending jobs of workflows are cancelled with the queued
        ones, and their dependents too.

        Args:
            status: "queued" cancels only the queued and pending jobs, "running"
                only requests the running ones' cancel; None does both.
            kind: Only jobs of this kind; None matches every kind.
            queue: Only jobs of this queue; None matches every queue.

        Returns:
            How many jobs were cancelled and how many cancels requested.

        Raises:
            ValueError: Another status, or a kind or queue that cannot be stored.
            TypeError: A kind or queue that is not a str.
        """
        if status is not None and status not in (Status.QUEUED, Status.RUNNING):
            raise ValueError(
                f"cancel_matching: status must be queued, running or None, got {status!r}"
            )
        kind, queue = check_filter("kind", kind), check_filter("queue", queue)
        total = BulkCancel(cancelled=0, requested=0)
        queued, requests = status != Status.RUNNING, status != Status.QUEUED
        while True:
            now = timestamp(self.clock())
            done = self.engine.write(CancelMatching(kind, queue, now, BULK_BATCH, queued, requests))
            requests = False
            total = BulkCancel(
                cancelled=total.cancelled + done.cancelled,
                requested=total.requested + done.requested,
            )
            if done.cancelled < BULK_BATCH:
                return total

    async def acancel_matching(
        self,
        *,
        status: Status | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> BulkCancel:
        """The async form of cancel_matching: the same batches, from a worker thread."""
        return await asyncio.to_thread(self.cancel_matching, status=status, kind=kind, queue=queue)

    def delete_matching(
        self,
        *,
        status: Status | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        """Deletes every job, not running, of status and kind in queue.

        In batches of 10,000, each its own transaction. Each job of a workflow is
        deleted as delete deletes it: the jobs that need it are settled in its
        batch.

        Args:
            status: Only jobs in this status; None matches every status.
            kind: Only jobs of this kind; None matches every kind.
            queue: Only jobs of this queue; None matches every queue.

        Returns:
            How many jobs were deleted.

        Raises:
            ValueError: An unknown status, or a kind or queue that cannot be stored.
            TypeError: A kind or queue that is not a str.
        """
        op = DeleteMatching(
            _status(status),
            check_filter("kind", kind),
            check_filter("queue", queue),
            BULK_BATCH,
            timestamp(self.clock()),
        )
        total = 0
        while True:
            deleted = self.engine.write(op)
            total += deleted
            if deleted < BULK_BATCH:
                return total

    async def adelete_matching(
        self,
        *,
        status: Status | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        """The async form of delete_matching: the same batches, from a worker thread."""
        return await asyncio.to_thread(self.delete_matching, status=status, kind=kind, queue=queue)

    def kind_figures(
        self, *, window: datetime.timedelta = _HOUR, limit: int = 20_000
    ) -> KindReport:
        """Returns each kind's throughput, failure rate and p50/p95 wait and run times.

        It reads the jobs that finished in the last window, the most recent first,
        through the index of finished rows; the report says when the window held
        more than limit. Percentiles are computed here, the same on both engines.

        Args:
            window: How far back to look, above 0 and at most a day.
            limit: At most this many finished jobs read, 1 to 100,000.

        Returns:
            The figures of each kind over the window.

        Raises:
            TypeError: window is not a timedelta.
            ValueError: window or limit is out of range.
        """
        return self.engine.read(self._figures(window, limit))

    async def akind_figures(
        self, *, window: datetime.timedelta = _HOUR, limit: int = 20_000
    ) -> KindReport:
        """The async form of kind_figures."""
        return await self.engine.aread(self._figures(window, limit))

    def _figures(self, window: datetime.timedelta, limit: int) -> ReadKindFigures:
        if not isinstance(window, datetime.timedelta):
            raise TypeError(f"kind_figures: window is {type(window).__name__}, want a timedelta")
        if not datetime.timedelta(0) < window <= datetime.timedelta(days=1):
            raise ValueError(
                f"kind_figures: window must be above 0 and at most a day, got {window!r}"
            )
        now = self.clock()
        return ReadKindFigures(
            timestamp(now - window),
            timestamp(now),
            _whole("kind_figures: limit", limit, 1, MAX_SCAN),
        )

    def health(self, *, lease: float = 30.0) -> Health:
        """Returns the queues with due jobs, whether live runners serve them, and dead ones' jobs.

        A queue's alarm is NO_LIVE_RUNNER when no runner is alive within lease
        seconds, and NOT_SERVED when runners are alive but none holds a job of the
        queue and its oldest due job has waited more than lease: runners do not
        record their queues, so the jobs they hold are the evidence. It reads the
        queued rows (not every row) and the running ones.

        Args:
            lease: Seconds after its last heartbeat at which a runner counts as dead.

        Returns:
            Each queue's health, and the jobs dead runners hold.

        Raises:
            ValueError: lease is not a positive number of seconds.
        """
        return self.engine.read(ReadHealth(timestamp(self.clock()), _lease(lease)))

    async def ahealth(self, *, lease: float = 30.0) -> Health:
        """The async form of health."""
        return await self.engine.aread(ReadHealth(timestamp(self.clock()), _lease(lease)))


def _lease(lease: float) -> float:
    if isinstance(lease, bool) or not isinstance(lease, int | float) or not lease > 0:
        raise ValueError(f"health: lease must be a positive number of seconds, got {lease!r}")
    return float(lease)
