"""The Store's tools for operators: retry, delete, prune, runners, stats, resealing, the schema.

Each tool is an operation, a small value holding its parameters and the
store clock's ``now`` text its caller took, run as a function of ``Queries``;
``AdminMethods`` is the group of Store methods that run them, each that
touches the database with its ``a``-prefixed async form. ``Store`` inherits
the group; the CLI and the dashboard call it as user code does.
"""

import asyncio
import dataclasses
import datetime
import functools
import json
import os
from collections.abc import Callable
from typing import NamedTuple

from jobtable._engines.base import Engine, Queries, Statement
from jobtable._engines.dependencies import (
    forget_deleted,
    retry_blockers,
    revive_dependents,
    settle_blockers,
    settle_dependents,
)
from jobtable._engines.grants import role_grants
from jobtable._engines.operator_queries import SealedRow
from jobtable._engines.target import open_engine, schema_versions
from jobtable._errors import SecretKeyError
from jobtable._job import Status
from jobtable._operations import lock_job
from jobtable._operator.models import (
    DeleteResult,
    QueueStats,
    RetryResult,
    RunnerInfo,
    SchemaState,
    Stats,
    ThroughputPoint,
)
from jobtable._secrets import HOW, SecretKeys, reseal
from jobtable._values import checked_id, timestamp, unstorable


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
                started_at=row.started_at,
                heartbeat_at=row.heartbeat_at,
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
                    age = at - row.oldest_run_at
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
                minute=row.minute,
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


_PRUNE_BATCH = 1000
_RESEAL_BATCH = 500
_RESEAL_TRIES = 3
_MAX_WINDOW = datetime.timedelta(days=7)


def _state(target: str | os.PathLike[str]) -> SchemaState:
    version, latest = schema_versions(target)
    return SchemaState(version=version, latest=latest, pending=version < latest)


def _older_than(older_than: datetime.timedelta) -> datetime.timedelta:
    if not isinstance(older_than, datetime.timedelta):
        raise TypeError(f"prune: older_than is {type(older_than).__name__}, want a timedelta")
    if older_than < datetime.timedelta(0):
        raise ValueError(f"prune: older_than must be 0 or more, got {older_than!r}")
    return older_than


def _window(window: datetime.timedelta) -> datetime.timedelta:
    if not isinstance(window, datetime.timedelta):
        raise TypeError(f"throughput: window is {type(window).__name__}, want a timedelta")
    if not datetime.timedelta(0) < window <= _MAX_WINDOW:
        raise ValueError(f"throughput: window must be above 0 and at most 7 days, got {window!r}")
    return window


def _resealed(job_id: str, payload: str, result: str | None, keys: SecretKeys) -> Resealed | None:
    """The change that seals a job's secrets under the current key; None when none needs it."""
    try:
        new_payload = reseal(payload, keys)
        new_result = None if result is None else reseal(result, keys)
    except SecretKeyError as err:
        raise SecretKeyError(f"rotate_secrets: job {job_id}: {err}") from None
    if new_payload is None and new_result is None:
        return None
    return Resealed(
        job_id,
        payload,
        payload if new_payload is None else new_payload,
        result,
        result if new_result is None else new_result,
    )


def _lease(lease: float) -> float:
    if isinstance(lease, bool) or not isinstance(lease, int | float) or not lease > 0:
        raise ValueError(f"runners: lease must be a positive number of seconds, got {lease!r}")
    return float(lease)


class AdminMethods:
    """The operations for operators of ``Store``, which sets engine and clock."""

    engine: Engine
    clock: Callable[[], datetime.datetime]
    secret_keys: SecretKeys | None

    def _now(self) -> str:
        return timestamp(self.clock())

    def retry(self, job_id: str) -> RetryResult:
        """Queues a failed or cancelled job again, ready at once, with fresh attempts.

        The job may then be claimed as many more times as its max_attempts
        allowed; its error history is kept, and its error, result and cancel
        request are cleared.

        Args:
            job_id: The job's id.

        Returns:
            RETRIED, and then the job is queued, or pending on the dependencies of
            its workflow that have not ended. Changing nothing, QUEUED, RUNNING or
            SUCCEEDED for a job in that status, KEY_HELD for a unique job whose key
            another job holds now, and BLOCKED for a job of a workflow that a
            dependency it needs blocks (failed, cancelled, or deleted before it
            succeeded); ``inspect(job_id).workflow.blocked_by`` names it, and its
            own retry brings this job back.

        Raises:
            JobNotFound: No job has the id.
            TypeError: job_id is not a str.
        """
        return self.engine.write(RetryJob(job_id, self._now()))

    async def aretry(self, job_id: str) -> RetryResult:
        """The async form of retry."""
        return await self.engine.awrite(RetryJob(job_id, self._now()))

    def retry_failed(self, *, kind: str | None = None, queue: str | None = None) -> int:
        """Queues again, as retry does, every failed job of kind in queue.

        A unique job whose key another job holds is left failed, and of failed
        jobs sharing a key only the newest is queued. Each job of a workflow is
        settled as retry settles one, in the same transaction.

        Args:
            kind: Only jobs of this kind; None matches every kind.
            queue: Only jobs of this queue; None matches every queue.

        Returns:
            How many jobs were queued again.

        Raises:
            TypeError: A filter is not a str; nothing changes.
            ValueError: A filter cannot be stored; nothing changes.
        """
        op = RetryFailedJobs(check_filter("kind", kind), check_filter("queue", queue), self._now())
        return self.engine.write(op)

    async def aretry_failed(self, *, kind: str | None = None, queue: str | None = None) -> int:
        """The async form of retry_failed."""
        op = RetryFailedJobs(check_filter("kind", kind), check_filter("queue", queue), self._now())
        return await self.engine.awrite(op)

    def delete(self, job_id: str) -> DeleteResult:
        """Deletes the job unless it is running.

        A queued job deleted is never run; the jobs of its workflow that depend on
        it are settled as if it was cancelled, in the same transaction. A job that
        needed it to succeed and had not counted its end stays cancelled for good,
        naming it (``cancelled_because`` is "dependency <id> deleted"): a retry of
        it is BLOCKED. No job is left pending for the deleted one.

        Args:
            job_id: The job's id.

        Returns:
            DELETED, or RUNNING when the job is running and kept.

        Raises:
            JobNotFound: No job has the id.
            TypeError: job_id is not a str.
        """
        return self.engine.write(DeleteJob(job_id, self._now()))

    async def adelete(self, job_id: str) -> DeleteResult:
        """The async form of delete."""
        return await self.engine.awrite(DeleteJob(job_id, self._now()))

    def prune(self, older_than: datetime.timedelta) -> int:
        """Deletes the jobs that finished more than older_than ago.

        The workflows created before then that have no job left go with them. A
        failed or cancelled job of a workflow that a job still needs (the
        dependent its end cancelled) is kept until that job is pruned: no job is
        left needing one that is gone. It deletes in batches, each its own
        transaction, so runners keep claiming meanwhile.

        Args:
            older_than: How long ago a job must have finished to go.

        Returns:
            How many jobs were deleted.

        Raises:
            ValueError: older_than is negative.
        """
        older_than = _older_than(older_than)
        try:
            before = timestamp(self.clock() - older_than)
        except OverflowError:
            return 0  # before year 1: no job finished so long ago
        total = 0
        while True:
            deleted = self.engine.write(PruneJobs(before, _PRUNE_BATCH))
            total += deleted
            if deleted < _PRUNE_BATCH:
                return total

    async def aprune(self, older_than: datetime.timedelta) -> int:
        """The async form of prune: the same batches, from a worker thread."""
        return await asyncio.to_thread(self.prune, older_than)

    def rotate_secrets(self) -> int:
        """Encrypts every stored secret under the current secret key.

        Run it after putting a new key first in the store's secret keys: once it
        returns, no stored job needs the old keys, and they can be dropped (run it
        again if runners without the new key went on enqueuing). It works in
        batches, each its own transaction, so runners keep running; a job whose
        result a handler publishes meanwhile is read again, up to 3 times, then
        left as it is. Running it again changes nothing.

        Returns:
            How many jobs changed.

        Raises:
            SecretKeyError: The store has no key, or a stored secret's key id is
                none of the store's (naming the job and the key id); the batches
                before stay changed.
        """
        keys = self.secret_keys
        if keys is None:
            raise SecretKeyError(f"rotate_secrets: no secret key is configured: {HOW}")
        after, total, tries = 0, 0, dict[str, int]()
        while True:
            rows = self.engine.read(ListSealed(after, _RESEAL_BATCH))
            changes = [
                (row.seq, change)
                for row in rows
                if (change := _resealed(row.id, row.payload, row.result, keys)) is not None
            ]
            stored = self.engine.write(Reseal(tuple(c for _, c in changes))) if changes else set()
            total += len(stored)
            again = []
            for seq, change in changes:
                if change.id not in stored:
                    tries[change.id] = tries.get(change.id, 0) + 1
                    if tries[change.id] < _RESEAL_TRIES:
                        again.append(seq)
            if again:
                after = min(again) - 1
            elif len(rows) < _RESEAL_BATCH:
                return total
            else:
                after = rows[-1].seq

    async def arotate_secrets(self) -> int:
        """The async form of rotate_secrets: the same batches, from a worker thread."""
        return await asyncio.to_thread(self.rotate_secrets)

    def runners(self, *, lease: float = 30.0) -> list[RunnerInfo]:
        """Returns every registered runner, by name, with the ids of the jobs it holds.

        On PostgreSQL the server's clock decides who is alive, as it does for the
        runners themselves.

        Args:
            lease: Seconds after its last heartbeat at which a runner counts as
                dead (the Runner's default lease is 30).

        Returns:
            One RunnerInfo per runner; ``alive`` is false for one whose heartbeat
            is older than lease.

        Raises:
            ValueError: lease is not a positive number of seconds.
        """
        return self.engine.read(ListRunners(self._now(), _lease(lease)))

    async def arunners(self, *, lease: float = 30.0) -> list[RunnerInfo]:
        """The async form of runners."""
        return await self.engine.aread(ListRunners(self._now(), _lease(lease)))

    def stats(self) -> Stats:
        """Returns each queue's job counts by status and its oldest due job's age.

        One snapshot, in one pass over the table: it reads every row, so its time
        grows with the table (BENCHMARKS.md gives it at a million rows).

        Returns:
            The snapshot, queue by queue.
        """
        return self.engine.read(ReadStats(self._now()))

    async def astats(self) -> Stats:
        """The async form of stats."""
        return await self.engine.aread(ReadStats(self._now()))

    def throughput(
        self, window: datetime.timedelta = datetime.timedelta(hours=1)
    ) -> list[ThroughputPoint]:
        """Returns how many jobs finished per minute and status over the last window.

        It reads only the window's rows, through the index of finished rows.

        Args:
            window: How far back to count, above 0 and at most 7 days.

        Returns:
            Points in minute order, then status; a minute in which no job finished
            has none.

        Raises:
            ValueError: window is not above 0 and at most 7 days.
        """
        since = timestamp(self.clock() - _window(window))
        return self.engine.read(ReadThroughput(since))

    async def athroughput(
        self, window: datetime.timedelta = datetime.timedelta(hours=1)
    ) -> list[ThroughputPoint]:
        """The async form of throughput."""
        since = timestamp(self.clock() - _window(window))
        return await self.engine.aread(ReadThroughput(since))

    @staticmethod
    def schema_state(target: str | os.PathLike[str]) -> SchemaState:
        """Tells whether the store at target needs its schema created or upgraded; changes nothing.

        Args:
            target: What ``Store.open`` takes. A missing SQLite file is version 0
                and is not created.

        Returns:
            The schema's version and whether an upgrade is pending.

        Raises:
            StoreError: As ``Store.open`` raises it for a target it cannot use, or
                the schema is newer than this jobtable's.
        """
        return _state(target)

    @staticmethod
    async def aschema_state(target: str | os.PathLike[str]) -> SchemaState:
        """The async form of schema_state."""
        return await asyncio.to_thread(_state, target)

    @staticmethod
    def migrate(target: str | os.PathLike[str], *, pooled: bool = False) -> SchemaState:
        """Creates or upgrades the schema at target, all or nothing.

        What ``Store.open`` does by default, for deploys that open with
        ``migrate=False``. Running it again does nothing.

        Args:
            target: What ``Store.open`` takes.
            pooled: ``Store.open``'s: target is a connection pooler's URL.

        Returns:
            The state it found, before the upgrade.

        Raises:
            StoreError: As ``Store.open`` raises it.
        """
        found = _state(target)
        engine, _ = open_engine(
            target, durable=True, busy_timeout=5.0, readers=1, upgrade=True, pooled=pooled
        )
        engine.close()
        return found

    @staticmethod
    async def amigrate(target: str | os.PathLike[str], *, pooled: bool = False) -> SchemaState:
        """The async form of migrate."""
        return await asyncio.to_thread(
            functools.partial(AdminMethods.migrate, target, pooled=pooled)
        )

    @staticmethod
    def grants(target: str | os.PathLike[str], role: str) -> list[str]:
        """Returns the SQL statements that let role use the PostgreSQL store at target; runs none.

        They grant what runners, web processes, the CLI and the dashboard
        need, and nothing more: USAGE on the schema, SELECT, INSERT, UPDATE
        and DELETE on jobtable's tables (only SELECT on the one that records
        the schema's version), EXECUTE on its functions. No right to create,
        alter or analyze anything: ``migrate`` stays the owner's. Each name
        is quoted and schema-qualified. Run them as the schema's owner after
        every ``migrate`` that created or upgraded it, since a later version
        may add a table.

        Args:
            target: The PostgreSQL URL, as ``Store.open`` takes it.
            role: The role to grant the rights to.

        Returns:
            The statements, in the order they would run.

        Raises:
            ValueError: For a SQLite target (it has no roles) or a role that
                cannot name one.
            StoreError: For a schema that is missing or not at this
                jobtable's version, or as ``Store.open`` does for a target it
                cannot use.
        """
        return role_grants(target, role, apply=False)

    @staticmethod
    async def agrants(target: str | os.PathLike[str], role: str) -> list[str]:
        """The async form of grants."""
        return await asyncio.to_thread(role_grants, target, role, apply=False)

    @staticmethod
    def grant(target: str | os.PathLike[str], role: str) -> list[str]:
        """Runs the statements of ``grants`` on target, in one transaction; returns them.

        target's user must own the schema (or hold the rights with grant
        option). Running it again changes nothing.

        Args:
            target: The PostgreSQL URL, as ``Store.open`` takes it.
            role: The role to grant the rights to.

        Returns:
            The statements it ran.

        Raises:
            ValueError: As ``grants`` does.
            StoreError: As ``grants`` does, and, granting nothing, for a role
                that does not exist or a user that may not grant.
        """
        return role_grants(target, role, apply=True)

    @staticmethod
    async def agrant(target: str | os.PathLike[str], role: str) -> list[str]:
        """The async form of grant."""
        return await asyncio.to_thread(role_grants, target, role, apply=True)
