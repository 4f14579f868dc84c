"""The Store's operations for operators: retry, delete, prune, runners, stats, the schema.

``Store`` inherits them; the CLI and the dashboard call them as user code
does. Each that touches the database has its ``a``-prefixed async form.
"""

import asyncio
import datetime
import functools
import os
from collections.abc import Callable

from jobtable._engines.base import Engine
from jobtable._engines.grants import role_grants
from jobtable._engines.target import open_engine, schema_versions
from jobtable._errors import SecretKeyError
from jobtable._operator.models import (
    DeleteResult,
    RetryResult,
    RunnerInfo,
    SchemaState,
    Stats,
    ThroughputPoint,
)
from jobtable._operator.operations import (
    DeleteJob,
    ListRunners,
    ListSealed,
    PruneJobs,
    ReadStats,
    ReadThroughput,
    Reseal,
    Resealed,
    RetryFailedJobs,
    RetryJob,
    check_filter,
)
from jobtable._secrets import HOW, SecretKeys, reseal
from jobtable._values import timestamp

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


class StoreOperations:
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
            functools.partial(StoreOperations.migrate, target, pooled=pooled)
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
