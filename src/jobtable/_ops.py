"""The operations jobtable hands an engine: each a function of ``Queries`` run in one transaction.

Each is a small object holding its parameters, so that a write can be
retried, logged or batched as a value. Their times come from ``now()`` as
they run, inside the transaction.
"""

import datetime
from collections.abc import Sequence
from typing import NamedTuple

from ._engine import ClaimedRow, JobRow, Queries, Statement
from ._errors import JobNotFound, NotRunning
from ._job import MESSAGE_INTERNAL, MESSAGE_INTERRUPTED
from ._values import now, timestamp, unstorable


def _ago(delta: datetime.timedelta) -> str:
    return timestamp(datetime.datetime.now(datetime.UTC) - delta)


class GetJob:
    """The read of one job; raises JobNotFound when no job has the id.

    Raises TypeError at once for an id that is not a str. A str that no
    engine can store as text (a NUL, a lone surrogate) is no job's id: it is
    JobNotFound without a query, so every engine answers alike.
    """

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        if not isinstance(job_id, str):
            raise TypeError(f"job id is {type(job_id).__name__}, want str")
        self.job_id = job_id

    def __call__(self, q: Queries) -> JobRow:
        row = None if unstorable(self.job_id) else q.get_job(id=self.job_id)
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

    __slots__ = ("attempt", "job_id", "result")

    def __init__(self, job_id: str, attempt: int, result: str) -> None:
        self.job_id = job_id
        self.attempt = attempt
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

    def refused(self) -> "Finish":
        """The outcome that replaces this one when the database refused it: MESSAGE_INTERNAL."""
        finish = Finish.__new__(Finish)
        finish.job_id, finish.kind, finish.attempt = self.job_id, self.kind, self.attempt
        finish.result, finish.error = None, MESSAGE_INTERNAL
        return finish


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
        stamp = now()
        cutoff = _ago(self.lease)
        previous = q.get_runner(name=self.name)
        namesake = None
        if previous is not None and previous.heartbeat_at >= cutoff:
            namesake = previous.heartbeat_at
        q.register_runner(name=self.name, now=stamp)
        own = q.fail_running_jobs(error=MESSAGE_INTERRUPTED, now=stamp, runner=self.name)
        dead = q.fail_jobs_of_dead_runners(error=MESSAGE_INTERRUPTED, now=stamp, cutoff=cutoff)
        q.delete_dead_runners(cutoff=cutoff)
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
    """The write that renews a runner's lease, fails dead runners' jobs and prunes old ones.

    held is the ids of the jobs the runner's workers have. A runner whose
    heartbeat is older than lease is dead; finished jobs older than
    retention are deleted, a thousand at a time (None keeps them).
    """

    __slots__ = ("held", "lease", "name", "retention")

    def __init__(
        self,
        name: str,
        held: frozenset[str],
        lease: datetime.timedelta,
        retention: datetime.timedelta | None,
    ) -> None:
        self.name = name
        self.held = held
        self.lease = lease
        self.retention = retention

    def __call__(self, q: Queries) -> Maintained:
        stamp = now()
        lost_lease = not q.heartbeat_runner(now=stamp, name=self.name)
        if lost_lease:
            q.register_runner(name=self.name, now=stamp)
        cutoff = _ago(self.lease)
        dead = q.fail_jobs_of_dead_runners(error=MESSAGE_INTERRUPTED, now=stamp, cutoff=cutoff)
        q.delete_dead_runners(cutoff=cutoff)
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
        if self.retention is not None:
            q.delete_finished_jobs(before=_ago(self.retention), max_jobs=1000)
        return Maintained(lost_lease, dead, len(lost))


class DeleteRunner:
    """The write that deregisters a runner that stopped."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, q: Queries) -> None:
        q.delete_runner(name=self.name)
