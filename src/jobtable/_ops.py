"""The operations jobtable hands an engine: each a function of ``Queries`` run in one transaction.

Each is a small object holding its parameters, so that a write can be
retried, logged or batched as a value. Their times come from the clock as
they run, inside the transaction; every time one write uses comes from one
reading of it.
"""

import datetime
import time
from collections.abc import Sequence
from typing import NamedTuple

from ._contact import StoreContact
from ._engine import ClaimedRow, JobRow, Queries, Statement
from ._errors import JobNotFound, NotRunning
from ._job import MESSAGE_INTERRUPTED
from ._values import now, timestamp


def _times(
    lease: datetime.timedelta, retention: datetime.timedelta | None = None
) -> tuple[str, str, str | None]:
    """Now, the lease's cutoff and the retention's, as text, from one reading of the clock.

    Every time one write uses comes from one reading: a write that waits
    (for a lock, a connection) between two readings would compare a
    heartbeat it wrote before the wait with a cutoff taken after it.
    """
    moment = datetime.datetime.now(datetime.UTC)
    cutoff = timestamp(moment - lease)
    pruned = None if retention is None else timestamp(moment - retention)
    return timestamp(moment), cutoff, pruned


def _fail_dead_runners(q: Queries, name: str, stamp: str, cutoff: str) -> int:
    """Fails the running jobs of runners that beat before cutoff and forgets those runners.

    Never those of the runner named name, which asks: it is alive. Returns
    how many jobs it failed.
    """
    dead = q.fail_jobs_of_dead_runners(
        error=MESSAGE_INTERRUPTED, now=stamp, cutoff=cutoff, runner=name
    )
    q.delete_dead_runners(cutoff=cutoff, name=name)
    return dead


class GetJob:
    """The read of one job; raises JobNotFound when no job has the id."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id

    def __call__(self, q: Queries) -> JobRow:
        row = q.get_job(id=self.job_id)
        if row is None:
            raise JobNotFound(f"job {self.job_id!r} not found")
        return row


class CreateJobs:
    """The write that stores jobs of one kind, all queued, in one transaction."""

    __slots__ = ("kind", "rows")

    def __init__(self, kind: str, rows: Sequence[tuple[str, str]]) -> None:
        self.kind = kind
        self.rows = rows

    def __call__(self, q: Queries) -> None:
        if len(self.rows) == 1:
            [(job_id, payload)] = self.rows
            q.create_job(id=job_id, kind=self.kind, payload=payload, now=now())
        else:
            q.insert_jobs(kind=self.kind, jobs=self.rows, now=now())


class Publish:
    """The write of a running job's partial result; raises NotRunning when its claim is gone."""

    __slots__ = ("attempt", "job_id", "kind", "result")

    def __init__(self, job: ClaimedRow, result: str) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempt
        self.result = result

    def __call__(self, q: Queries) -> None:
        changed = q.publish_job_result(
            result=self.result, now=now(), id=self.job_id, attempt=self.attempt
        )
        if changed != 1:
            raise NotRunning(f"publish result: job {self.job_id} is not running")


class Finish:
    """A job's outcome: its result, or its error when error is set."""

    __slots__ = ("attempt", "error", "job_id", "kind", "result")

    def __init__(
        self, job: ClaimedRow, *, result: str | None = None, error: str | None = None
    ) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempt
        self.result = result
        self.error = error


class FinishAndClaim(Statement[tuple[list[str], Sequence[ClaimedRow]]]):
    """The write that stores finished jobs' outcomes and claims up to max_jobs jobs.

    Returns the ids of the jobs it finished and the jobs it claimed. With no
    outcomes it is a plain claim; with max_jobs 0, a plain record.
    """

    __slots__ = ("max_jobs", "outcomes", "runner")

    def __init__(self, outcomes: Sequence[Finish], runner: str, max_jobs: int) -> None:
        self.outcomes = outcomes
        self.runner = runner
        self.max_jobs = max_jobs

    def __call__(self, q: Queries) -> tuple[list[str], Sequence[ClaimedRow]]:
        outcomes = self.outcomes
        return q.finish_and_claim_jobs(
            ids=[o.job_id for o in outcomes],
            attempts=[o.attempt for o in outcomes],
            results=[o.result for o in outcomes],
            errors=[o.error for o in outcomes],
            runner=self.runner,
            now=now(),
            max_jobs=self.max_jobs,
        )


class Started(NamedTuple):
    """What StartRunner found and did."""

    live_namesake: str | None
    """The heartbeat of an earlier runner of this name that was still within its lease."""
    interrupted: int
    """How many running jobs, of the earlier runner and of dead runners, it failed."""


class StartRunner:
    """The write that registers a runner and fails the jobs it and dead runners left running.

    A runner whose heartbeat is older than lease is dead.
    """

    __slots__ = ("lease", "name")

    def __init__(self, name: str, lease: datetime.timedelta) -> None:
        self.name = name
        self.lease = lease

    def __call__(self, q: Queries) -> Started:
        stamp, cutoff, _ = _times(self.lease)
        previous = q.get_runner(name=self.name)
        namesake = None
        if previous is not None and previous.heartbeat_at >= cutoff:
            namesake = previous.heartbeat_at
        q.register_runner(name=self.name, now=stamp)
        own = q.fail_running_jobs(error=MESSAGE_INTERRUPTED, now=stamp, runner=self.name)
        dead = _fail_dead_runners(q, self.name, stamp, cutoff)
        return Started(namesake, own + dead)


class Maintained(NamedTuple):
    """What a round of Maintain did."""

    lost_lease: bool
    """The runner's registration was gone (its lease expired), so it registered again."""
    dead: int
    """How many running jobs of dead runners it failed as interrupted."""
    lost: int
    """How many jobs this runner claimed but never received that it failed as interrupted."""


class Maintain:
    """The write that renews a runner's lease, fails stale jobs and prunes old ones.

    held is the ids of the jobs the runner's workers have. A runner whose
    heartbeat is older than lease is dead; finished jobs older than
    retention are deleted, a thousand at a time (None keeps them). The write
    was asked for at started, on contact's clock: stale jobs are failed only
    when contact says this runner may judge (see ``StoreContact``), since
    until then a stale heartbeat may be a peer that could not reach the store
    either, and a stale claim of its own may be one whose reply is still on
    its way.
    """

    __slots__ = ("contact", "held", "lease", "name", "retention", "started")

    def __init__(
        self,
        name: str,
        held: frozenset[str],
        lease: datetime.timedelta,
        retention: datetime.timedelta | None,
        *,
        contact: StoreContact,
        started: float,
    ) -> None:
        self.name = name
        self.held = held
        self.lease = lease
        self.retention = retention
        self.contact = contact
        self.started = started

    def __call__(self, q: Queries) -> Maintained:
        judge = self.contact.may_judge(self.started, time.monotonic())
        stamp, cutoff, pruned = _times(self.lease, self.retention)
        lost_lease = not q.heartbeat_runner(now=stamp, name=self.name)
        if lost_lease:
            q.register_runner(name=self.name, now=stamp)
        dead, lost = self._fail_stale(q, stamp, cutoff) if judge else (0, 0)
        if pruned is not None:
            q.delete_finished_jobs(before=pruned, max_jobs=1000)
        return Maintained(lost_lease, dead, lost)

    def _fail_stale(self, q: Queries, stamp: str, cutoff: str) -> tuple[int, int]:
        """Fails dead runners' jobs, and the claims older than cutoff it never received.

        Returns how many of each it failed.
        """
        dead = _fail_dead_runners(q, self.name, stamp, cutoff)
        # A claim can commit while its reply is lost (a connection dropped at
        # COMMIT): the job runs under this name, but no worker has it. Once it
        # is older than the lease and still not held, it is failed as
        # interrupted, as a dead runner's job would be.
        lost = [
            row
            for row in q.list_running_jobs(runner=self.name, before=cutoff)
            if row.id not in self.held
        ]
        for row in lost:
            q.fail_job(error=MESSAGE_INTERRUPTED, now=stamp, id=row.id, attempt=row.attempt)
        return dead, len(lost)


class DeleteRunner:
    """The write that deregisters a runner that stopped."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, q: Queries) -> None:
        q.delete_runner(name=self.name)
