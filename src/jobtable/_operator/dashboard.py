"""The Store's tools behind the dashboard: names, search, bulk actions, figures, health.

What they return (per-kind figures, health, bulk counts; none holds a
handler's exception text), the operations that read and write them, each a
function of ``Queries``, and ``DashboardMethods``, the group of Store
methods that run them, each that touches the database with its
``a``-prefixed async form. ``Store`` inherits the group; the dashboard calls
it as user code may.
"""

import asyncio
import dataclasses
import datetime
import enum
import math
from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from jobtable._engines.base import Engine, Queries
from jobtable._engines.dashboard_queries import FinishedRow
from jobtable._engines.dependencies import settle_stranded
from jobtable._errors import JobNotFound
from jobtable._job import CancelResult, JobRecord, Status, record_from_row
from jobtable._operations import CancelJob
from jobtable._operator.admin import DeleteJob, ListRunners, check_filter
from jobtable._operator.models import DeleteResult
from jobtable._values import checked_id, timestamp, unstorable


class KindFigures(BaseModel):
    """One kind's finished jobs over a window: how many, how they ended, how long they took.

    failure_rate is failed over succeeded plus failed (None when neither);
    wait is started_at minus run_at (how long a due job waited for a
    worker), run is finished_at minus started_at of the jobs that succeeded
    or failed; their p50 and p95 are None when no job has them.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    finished: int
    succeeded: int
    failed: int
    cancelled: int
    per_minute: float
    failure_rate: float | None
    wait_p50: datetime.timedelta | None
    wait_p95: datetime.timedelta | None
    run_p50: datetime.timedelta | None
    run_p95: datetime.timedelta | None


class KindReport(BaseModel):
    """Every kind that finished jobs since ``since``, by name, read at ``at``.

    The figures come from the jobs read, at most ``limit``, the most recent
    first: complete is false when the window held more, and then the figures
    cover only the read jobs' span.
    """

    model_config = ConfigDict(frozen=True)

    at: datetime.datetime
    since: datetime.datetime
    read: int
    limit: int
    complete: bool
    kinds: list[KindFigures]


class QueueAlarm(enum.StrEnum):
    """Why a queue's due jobs may not run."""

    NO_LIVE_RUNNER = "no_live_runner"
    """No runner is alive at all: nothing will run the queue's due jobs."""
    NOT_SERVED = "not_served"
    """Runners are alive, none holds a job of the queue, and its due jobs waited past the lease.

    Runners do not record the queues they serve, so this is evidence, not
    proof: a live runner serving the queue would have claimed them.
    """


class QueueHealth(BaseModel):
    """A queue with jobs due now: how many, since when, and the alarm if they may not run."""

    model_config = ConfigDict(frozen=True)

    queue: str
    due: int
    oldest_due_at: datetime.datetime
    held_by_live: int
    alarm: QueueAlarm | None


class Health(BaseModel):
    """Whether the due jobs have live runners to run them, and which jobs dead runners hold.

    live_runners names the runners alive within the lease; queues are the
    queues with due jobs; dead_held maps the id of each running job whose
    runner is dead (or no longer registered) to that runner's name: another
    runner's maintenance fails it as interrupted.
    """

    model_config = ConfigDict(frozen=True)

    at: datetime.datetime
    lease: float
    live_runners: list[str]
    queues: list[QueueHealth]
    dead_held: dict[str, str]


class BulkCancel(BaseModel):
    """What a cancel of many jobs did: cancelled queued ones, requested running ones."""

    model_config = ConfigDict(frozen=True)

    cancelled: int
    requested: int


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


@dataclasses.dataclass(frozen=True, slots=True)
class ListNames:
    """The read of every kind (or queue) that has a job, by a skip-scan of an index."""

    of: str

    def __call__(self, q: Queries) -> list[str]:
        if self.of == "kind":
            return [row.kind for row in q.list_kind_names()]
        return [row.queue for row in q.list_queue_names()]


@dataclasses.dataclass(frozen=True, slots=True)
class SearchPayloads:
    """The read of up to limit of the scan newest jobs whose payload holds text."""

    text: str
    scan: int
    limit: int

    def __call__(self, q: Queries) -> list[JobRecord]:
        rows = q.search_payloads(scan=self.scan, text=self.text, max_jobs=self.limit)
        return [record_from_row(row) for row in rows]


@dataclasses.dataclass(frozen=True, slots=True)
class CancelMany:
    """The write that cancels each job of ids as ``Store.cancel`` does; unknown ids are left out."""

    ids: tuple[str, ...]
    now: str

    def __call__(self, q: Queries) -> dict[str, CancelResult]:
        results: dict[str, CancelResult] = {}
        for job_id in self.ids:
            if unstorable(job_id):
                continue
            try:
                results[job_id] = CancelJob(job_id, self.now)(q)
            except JobNotFound:
                continue
        return results


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteMany:
    """The write that deletes each job of ids as ``Store.delete`` does; unknown ids are left out."""

    ids: tuple[str, ...]
    now: str

    def __call__(self, q: Queries) -> dict[str, DeleteResult]:
        results: dict[str, DeleteResult] = {}
        for job_id in self.ids:
            try:
                results[job_id] = DeleteJob(job_id, self.now)(q)
            except JobNotFound:
                continue
        return results


@dataclasses.dataclass(frozen=True, slots=True)
class CancelMatching:
    """The write that cancels up to batch queued or pending jobs matching the filters (with queued).

    With requests, it also asks the runners of every matching running job to
    cancel it (those are few: no more than the runners' workers).
    """

    kind: str | None
    queue: str | None
    now: str
    batch: int
    queued: bool
    requests: bool

    def __call__(self, q: Queries) -> BulkCancel:
        cancelled = 0
        if self.queued:
            cancelled = q.cancel_queued_matching(
                now=self.now, kind=self.kind, queue=self.queue, max_jobs=self.batch
            )
            if cancelled < self.batch:
                cancelled += q.cancel_pending_matching(
                    now=self.now, kind=self.kind, queue=self.queue, max_jobs=self.batch - cancelled
                )
            if cancelled:
                settle_stranded(q, self.now)
        requested = 0
        if self.requests:
            requested = q.request_cancel_matching(now=self.now, kind=self.kind, queue=self.queue)
            if requested:
                q.notify_cancel()
        return BulkCancel(cancelled=cancelled, requested=requested)


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteMatching:
    """The write that deletes up to batch jobs, not running, matching the filters; returns how many.

    A job of a workflow that another job needs is deleted as ``DeleteJob``
    deletes it, settling that job; the others, by one statement.
    """

    status: str | None
    kind: str | None
    queue: str | None
    batch: int
    now: str

    def __call__(self, q: Queries) -> int:
        deleted = 0
        needed = q.list_needed_matching(
            status=self.status, kind=self.kind, queue=self.queue, max_jobs=self.batch
        )
        for row in needed:
            deleted += DeleteJob(row.id, self.now)(q) is DeleteResult.DELETED
        unneeded = q.delete_matching(
            status=self.status, kind=self.kind, queue=self.queue, max_jobs=self.batch - deleted
        )
        if unneeded:
            q.wake_runners()  # a deleted job may have held back a job of its sequence
        return deleted + unneeded


def percentile(sorted_values: Sequence[datetime.timedelta], p: float) -> datetime.timedelta | None:
    """The nearest-rank p-th quantile (p from 0 to 1) of sorted values, or None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p * len(sorted_values)))
    return sorted_values[rank - 1]


def figures(kind: str, rows: Sequence[FinishedRow], minutes: float) -> KindFigures:
    """The figures of kind's finished rows over a span of minutes."""
    counts = {status: 0 for status in (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)}
    waits: list[datetime.timedelta] = []
    runs: list[datetime.timedelta] = []
    for row in rows:
        counts[Status(row.status)] += 1
        if row.started_at is None:
            continue
        started = row.started_at
        waits.append(max(datetime.timedelta(0), started - row.run_at))
        if row.status != Status.CANCELLED:
            runs.append(max(datetime.timedelta(0), row.finished_at - started))
    waits.sort()
    runs.sort()
    ended = counts[Status.SUCCEEDED] + counts[Status.FAILED]
    return KindFigures(
        kind=kind,
        finished=len(rows),
        succeeded=counts[Status.SUCCEEDED],
        failed=counts[Status.FAILED],
        cancelled=counts[Status.CANCELLED],
        per_minute=len(rows) / minutes if minutes > 0 else 0.0,
        failure_rate=counts[Status.FAILED] / ended if ended else None,
        wait_p50=percentile(waits, 0.5),
        wait_p95=percentile(waits, 0.95),
        run_p50=percentile(runs, 0.5),
        run_p95=percentile(runs, 0.95),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ReadKindFigures:
    """The read of the per-kind figures of up to limit jobs that finished since since."""

    since: str
    now: str
    limit: int

    def __call__(self, q: Queries) -> KindReport:
        rows = q.finished_since(since=self.since, max_jobs=self.limit)
        by_kind: dict[str, list[FinishedRow]] = {}
        for row in rows:
            by_kind.setdefault(row.kind, []).append(row)
        since, at = _time(self.since), _time(self.now)
        complete = len(rows) < self.limit
        # A cut-off read covers from its oldest job on: rates are over that span.
        start = since if complete or not rows else rows[-1].finished_at
        minutes = (at - start).total_seconds() / 60
        return KindReport(
            at=at,
            since=since,
            read=len(rows),
            limit=self.limit,
            complete=complete,
            kinds=[figures(kind, by_kind[kind], minutes) for kind in sorted(by_kind)],
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ReadHealth:
    """The read of the due jobs per queue, the live runners, and the jobs dead runners hold."""

    now: str
    lease: float

    def __call__(self, q: Queries) -> Health:
        at = _time(self.now)
        runners = ListRunners(self.now, self.lease)(q)
        live = {runner.name for runner in runners if runner.alive}
        held_by_live: dict[str, int] = {}
        dead_held: dict[str, str] = {}
        for running in q.list_running_queues():
            if running.runner in live:
                held_by_live[running.queue] = held_by_live.get(running.queue, 0) + 1
            else:
                dead_held[running.id] = running.runner or "-"
        queues = []
        for row in q.oldest_due_by_queue(now=self.now):
            oldest = row.oldest_run_at
            held = held_by_live.get(row.queue, 0)
            alarm = None
            if not live:
                alarm = QueueAlarm.NO_LIVE_RUNNER
            elif not held and (at - oldest).total_seconds() > self.lease:
                alarm = QueueAlarm.NOT_SERVED
            queues.append(
                QueueHealth(
                    queue=row.queue,
                    due=row.jobs,
                    oldest_due_at=oldest,
                    held_by_live=held,
                    alarm=alarm,
                )
            )
        return Health(
            at=at, lease=self.lease, live_runners=sorted(live), queues=queues, dead_held=dead_held
        )


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


class DashboardMethods:
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
