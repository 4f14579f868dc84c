"""The operations behind the Store's tools for operators: each a function of ``Queries``.

Like those of ``jobtable._operations``, each is a small value holding its
parameters and the store clock's ``now`` text its caller took.
"""

import dataclasses
import datetime
import json
from typing import NamedTuple

from jobtable._engines.base import Queries, Statement
from jobtable._engines.dependencies import (
    forget_deleted,
    retry_blockers,
    revive_dependents,
    settle_blockers,
    settle_dependents,
)
from jobtable._engines.operator_queries import SealedRow
from jobtable._job import Status
from jobtable._operations import lock_job
from jobtable._operator.models import (
    DeleteResult,
    QueueStats,
    RetryResult,
    RunnerInfo,
    Stats,
    ThroughputPoint,
)
from jobtable._values import checked_id, unstorable


def check_filter(label: str, value: str | None) -> str | None:
    """Returns value, a filter on kind or queue; TypeError or ValueError naming a bad one."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{label} filter is {type(value).__name__}, want str or None")
    if why := unstorable(value):
        raise ValueError(f"{label} filter {value!r}: {why}")
    return value


def settle_retried(q: Queries, job_id: str, now: str) -> None:
    """Settles a job just requeued by a retry with the jobs it depends on and that depend on it.

    A job of no workflow has none. A job of a workflow waits again for a
    dependency retried since its end counted; the jobs that counted its
    end, or that its end cancelled, wait for it again; and a dependency of
    its own that still blocks it cancels it again.
    """
    q.wait_again(job=job_id)
    q.reopen_dependents(dep=job_id, now=now)
    revive_dependents(q, job_id, now)
    settle_blockers(q, job_id, now)


class RetryJob:
    """The write that queues a failed or cancelled job again; see ``Store.retry``.

    It acts on one status of the job, the one ``lock_job`` read. A job of a
    workflow that a dependency blocks (``retry_blockers``) is left as it
    is: BLOCKED.
    """

    __slots__ = ("job_id", "now")

    def __init__(self, job_id: str, now: str) -> None:
        self.job_id = checked_id(job_id)
        self.now = now

    def __call__(self, q: Queries) -> RetryResult:
        status = lock_job(q, self.job_id)
        if status is Status.PENDING:
            return RetryResult.QUEUED
        if status not in (Status.FAILED, Status.CANCELLED):
            return RetryResult(status.value)
        if retry_blockers(q, self.job_id):
            return RetryResult.BLOCKED
        if not q.requeue_job(now=self.now, id=self.job_id):
            return RetryResult.KEY_HELD
        settle_retried(q, self.job_id, self.now)
        q.wake_runners()
        return RetryResult.RETRIED


@dataclasses.dataclass(frozen=True, slots=True)
class RetryFailedJobs:
    """The write that queues again every failed job matching the filters; returns how many.

    The jobs of no workflow in one statement; each job of a workflow is
    retried by ``RetryJob``, in the same transaction, so that it is settled,
    or refused as BLOCKED, exactly as a single retry of it would be.
    """

    kind: str | None
    queue: str | None
    now: str

    def __call__(self, q: Queries) -> int:
        count = q.requeue_failed_jobs(now=self.now, kind=self.kind, queue=self.queue)
        if count:
            q.wake_runners()
        # In enqueue order, so a job's dependencies (stored before it) come
        # first: retried already, they no longer block it.
        for job_id in q.failed_workflow_jobs(kind=self.kind, queue=self.queue):
            count += RetryJob(job_id, self.now)(q) is RetryResult.RETRIED
        return count


class DeleteJob:
    """The write that deletes a job unless it is running; see ``Store.delete``.

    It acts on one status of the job, the one ``lock_job`` read: a job that
    a claim made running meanwhile is kept. Every delete of a job that
    another job needs, single or in bulk, is this write: the jobs that
    need the deleted one are settled in its transaction.
    """

    __slots__ = ("job_id", "now")

    def __init__(self, job_id: str, now: str) -> None:
        self.job_id = checked_id(job_id)
        self.now = now

    def __call__(self, q: Queries) -> DeleteResult:
        status = lock_job(q, self.job_id)
        if status is Status.RUNNING:
            return DeleteResult.RUNNING
        if status in (Status.QUEUED, Status.PENDING):
            # A job of a workflow that will never run: its dependents are
            # settled as if it was cancelled, not left waiting for it.
            q.cancel_queued_job(now=self.now, id=self.job_id)
            settle_dependents(q, self.job_id, self.now)
        forget_deleted(q, self.job_id)
        q.delete_job(id=self.job_id)
        if status is not Status.SUCCEEDED:
            # It may have held back a job of its sequence (failed or
            # cancelled, or queued before it): a held job is released now.
            q.wake_runners()
        return DeleteResult.DELETED


class PruneJobs(Statement[int]):
    """The write that deletes up to batch jobs that finished before before, oldest first.

    Up to batch workflows created before before that have no job left go
    with them. Returns how many jobs it deleted.
    """

    __slots__ = ("batch", "before")

    def __init__(self, before: str, batch: int) -> None:
        self.before = before
        self.batch = batch

    def __call__(self, q: Queries) -> int:
        pruned = q.delete_finished_jobs(before=self.before, max_jobs=self.batch)
        # A workflow goes with its last job.
        q.delete_empty_workflows(before=self.before, max_workflows=self.batch)
        return pruned


@dataclasses.dataclass(frozen=True, slots=True)
class ListRunners:
    """The read of every registered runner and the running jobs each holds."""

    now: str
    lease: float

    def __call__(self, q: Queries) -> list[RunnerInfo]:
        held: dict[str, list[str]] = {}
        queues: dict[str, dict[str, None]] = {}
        for row in q.list_held_jobs():
            if row.runner is not None:
                held.setdefault(row.runner, []).append(row.id)
                queues.setdefault(row.runner, {})[row.queue] = None
        return [
            RunnerInfo(
                name=row.name,
                started_at=datetime.datetime.fromisoformat(row.started_at),
                heartbeat_at=datetime.datetime.fromisoformat(row.heartbeat_at),
                alive=row.alive,
                jobs=held.get(row.name, []),
                queues=sorted(queues.get(row.name, {})),
                missing_keys=_key_ids(row.missing_keys),
            )
            for row in q.list_runners(now=self.now, lease=self.lease)
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class ReadStats:
    """The read of each queue's counts by status and the age of its oldest due job."""

    now: str

    def __call__(self, q: Queries) -> Stats:
        at = datetime.datetime.fromisoformat(self.now)
        counts: dict[str, dict[Status, int]] = {}
        ages: dict[str, datetime.timedelta] = {}
        scheduled: dict[str, int] = {}
        for row in q.job_stats(now=self.now):
            counts.setdefault(row.queue, {})[Status(row.status)] = row.jobs
            if row.status == Status.QUEUED:
                scheduled[row.queue] = row.jobs - row.due
                if row.due:
                    age = at - datetime.datetime.fromisoformat(row.oldest_run_at)
                    ages[row.queue] = max(age, datetime.timedelta(0))
        queues = [
            QueueStats(
                queue=queue,
                counts=by_status,
                oldest_queued_age=ages.get(queue),
                scheduled=scheduled.get(queue, 0),
            )
            for queue, by_status in counts.items()
        ]
        return Stats(at=at, queues=queues)


@dataclasses.dataclass(frozen=True, slots=True)
class ReadThroughput:
    """The read of how many jobs finished per minute and status since since."""

    since: str

    def __call__(self, q: Queries) -> list[ThroughputPoint]:
        return [
            ThroughputPoint(
                minute=datetime.datetime.fromisoformat(row.minute),
                status=Status(row.status),
                jobs=row.jobs,
            )
            for row in q.finished_per_minute(since=self.since)
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class ListSealed:
    """The read of up to batch jobs after seq after, in seq order, that hold encrypted secrets."""

    after: int
    batch: int

    def __call__(self, q: Queries) -> list[SealedRow]:
        return list(q.list_sealed_jobs(after_seq=self.after, max_jobs=self.batch))


class Resealed(NamedTuple):
    """A job's texts as read, and as they are to be stored with their secrets sealed anew."""

    id: str
    old_payload: str
    new_payload: str
    old_result: str | None
    new_result: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Reseal:
    """The write that stores each change whose job's texts are still as read; returns their ids."""

    changes: tuple[Resealed, ...]

    def __call__(self, q: Queries) -> set[str]:
        return {
            c.id
            for c in self.changes
            if q.reseal_job(
                new_payload=c.new_payload,
                new_result=c.new_result,
                id=c.id,
                old_payload=c.old_payload,
                old_result=c.old_result,
            )
        }


def _key_ids(missing_keys: str | None) -> list[str]:
    """The key ids of a runner's missing_keys column, a JSON array; none for null."""
    if missing_keys is None:
        return []
    return [str(key_id) for key_id in json.loads(missing_keys)]
