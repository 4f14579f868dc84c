"""The operations behind the Store's dashboard tools: each a function of ``Queries``.

Like ``jobtable._operator.operations``, each is a small value holding its
parameters and the store clock's ``now`` text its caller took.
"""

import dataclasses
import datetime
import math
from collections.abc import Sequence

from jobtable._engines.base import Queries
from jobtable._engines.dashboard_queries import FinishedRow
from jobtable._engines.dependencies import settle_stranded
from jobtable._errors import JobNotFound
from jobtable._job import CancelResult, JobRecord, Status, record_from_row
from jobtable._operations import CancelJob
from jobtable._operator.dashboard_models import (
    BulkCancel,
    Health,
    KindFigures,
    KindReport,
    QueueAlarm,
    QueueHealth,
)
from jobtable._operator.models import DeleteResult
from jobtable._operator.operations import DeleteJob, ListRunners
from jobtable._values import unstorable


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
        started = _time(row.started_at)
        waits.append(max(datetime.timedelta(0), started - _time(row.run_at)))
        if row.status != Status.CANCELLED:
            runs.append(max(datetime.timedelta(0), _time(row.finished_at) - started))
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
        start = since if complete or not rows else _time(rows[-1].finished_at)
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
            oldest = _time(row.oldest_run_at)
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
