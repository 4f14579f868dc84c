"""The runner's operations on the store: each a function of ``Queries`` run in one transaction.

Claims, outcomes, partial results, cancel requests, and the runner's own
registration, heartbeat and crash recovery. Like the store's operations
(``jobtable._operations``), each is a small object holding its parameters, so
that a write can be retried, logged or batched as a value. Their times come
from the store's clock: the ``now`` text their caller took as it built them,
or, for the lease arithmetic, one reading of the clock as they run inside the
transaction (a write that waited for a lock between two readings would
compare a heartbeat it wrote before the wait with a cutoff taken after it).
"""

import dataclasses
import datetime
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from jobtable._engines.base import ClaimedRow, Outcome, Queries, Statement
from jobtable._errors import NotRunning
from jobtable._job import MESSAGE_INTERNAL, MESSAGE_INTERRUPTED
from jobtable._runner.contact import StoreContact
from jobtable._values import timestamp

Clock = Callable[[], datetime.datetime]


def _before(now: str, delta: datetime.timedelta) -> str:
    return timestamp(datetime.datetime.fromisoformat(now) - delta)


def _end_dead_runners(q: Queries, name: str, stamp: str, lease: float) -> int:
    """Interrupts the running jobs of runners dead for lease seconds and forgets those runners.

    Never those of the runner named name, which asks: it is alive. Returns
    how many jobs it interrupted.
    """
    dead = q.interrupt_jobs_of_dead_runners(
        error=MESSAGE_INTERRUPTED, now=stamp, lease=lease, runner=name
    )
    q.delete_dead_runners(now=stamp, lease=lease, name=name)
    return dead


@dataclasses.dataclass(frozen=True, slots=True)
class NextRunAt:
    """The read of the earliest run_at among the queued jobs of queue (None: none queued)."""

    queue: str

    def __call__(self, q: Queries) -> str | None:
        return q.next_run_at(queue=self.queue)


class StageJobs(Statement[int]):
    """The write that makes the scheduled jobs of queue whose run_at has come ready."""

    __slots__ = ("now", "queue")

    def __init__(self, queue: str, now: str) -> None:
        self.queue = queue
        self.now = now

    def __call__(self, q: Queries) -> int:
        return q.stage_jobs(queue=self.queue, now=self.now)


@dataclasses.dataclass(frozen=True, slots=True)
class ListCancelRequests:
    """The read of the jobs running under runner whose cancel was requested, with attempts."""

    runner: str

    def __call__(self, q: Queries) -> dict[str, int]:
        return {row.id: row.attempt for row in q.list_cancel_requests(runner=self.runner)}


class Publish:
    """The write of a running job's partial result; raises NotRunning when its claim is gone."""

    __slots__ = ("attempt", "job_id", "kind", "now", "result")

    def __init__(self, job: ClaimedRow, result: str, now: str) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempt
        self.result = result
        self.now = now

    def __call__(self, q: Queries) -> None:
        changed = q.publish_job_result(
            result=self.result, now=self.now, id=self.job_id, attempt=self.attempt
        )
        if changed != 1:
            raise NotRunning(f"publish result: job {self.job_id} is not running")


class Finish(NamedTuple):
    """How one attempt of a job of kind ends; the completer stores it (see ``Outcome``)."""

    outcome: Outcome
    kind: str

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self.outcome.id

    @classmethod
    def succeeded(cls, job: ClaimedRow, result: str) -> "Finish":
        """The attempt succeeded with result."""
        return cls(Outcome(job.id, job.attempt, "succeeded", result, None, None), job.kind)

    @classmethod
    def failed(cls, job: ClaimedRow, error: str, retry_at: str | None = None) -> "Finish":
        """The attempt failed with error: finally, or to be retried from retry_at on."""
        state = "failed" if retry_at is None else "queued"
        return cls(Outcome(job.id, job.attempt, state, None, error, retry_at), job.kind)

    @classmethod
    def snoozed(cls, job: ClaimedRow, run_at: str) -> "Finish":
        """The handler asked for a later attempt, from run_at on."""
        return cls(Outcome(job.id, job.attempt, "queued", None, None, run_at), job.kind)

    @classmethod
    def cancelled(cls, job: ClaimedRow) -> "Finish":
        """The job's cancel was requested and its handler stopped."""
        return cls(Outcome(job.id, job.attempt, "cancelled", None, None, None), job.kind)

    @property
    def error(self) -> str | None:
        """The attempt's error, or None."""
        return self.outcome.error

    def refused(self) -> "Finish":
        """The outcome that replaces this one when the database refused it: MESSAGE_INTERNAL.

        Final: the same outcome would be refused again.
        """
        outcome = self.outcome
        failed = Outcome(outcome.id, outcome.attempt, "failed", None, MESSAGE_INTERNAL, None)
        return Finish(failed, self.kind)


class FinishAndClaim(Statement[tuple[list[str], Sequence[ClaimedRow]]]):
    """The write that stores finished attempts' outcomes and claims up to max_jobs jobs of queue.

    Returns the ids of the jobs it finished and the jobs it claimed. With no
    outcomes it is a plain claim; with max_jobs 0, a plain record. With
    kinds, it claims only jobs of those kinds.
    """

    __slots__ = ("kinds", "max_jobs", "now", "outcomes", "queue", "runner")

    def __init__(
        self,
        outcomes: Sequence[Finish],
        runner: str,
        queue: str,
        max_jobs: int,
        now: str,
        kinds: Sequence[str] | None = None,
    ) -> None:
        self.outcomes = outcomes
        self.runner = runner
        self.queue = queue
        self.max_jobs = max_jobs
        self.now = now
        self.kinds = kinds

    def __call__(self, q: Queries) -> tuple[list[str], Sequence[ClaimedRow]]:
        return q.finish_and_claim_jobs(
            outcomes=[f.outcome for f in self.outcomes],
            runner=self.runner,
            queue=self.queue,
            now=self.now,
            max_jobs=self.max_jobs,
            kinds=self.kinds,
        )


class Started(NamedTuple):
    """What StartRunner found and did."""

    live_namesake: str | None
    """The heartbeat of an earlier runner of this name that was still within its lease."""
    interrupted: int
    """How many running jobs, of the earlier runner and of dead runners, it interrupted."""


@dataclasses.dataclass(frozen=True, slots=True)
class StartRunner:
    """The write that registers a runner and interrupts the jobs it and dead runners left running.

    A runner whose heartbeat is older than lease is dead. An interrupted job
    goes back to its queue while attempts remain, and fails as interrupted
    after its last.
    """

    name: str
    lease: datetime.timedelta
    clock: Clock

    def __call__(self, q: Queries) -> Started:
        stamp = timestamp(self.clock())
        lease = self.lease.total_seconds()
        previous = q.get_runner(name=self.name, now=stamp, lease=lease)
        namesake = None
        if previous is not None and previous.alive:
            namesake = previous.heartbeat_at
        q.register_runner(name=self.name, now=stamp)
        own = q.interrupt_running_jobs(error=MESSAGE_INTERRUPTED, now=stamp, runner=self.name)
        dead = _end_dead_runners(q, self.name, stamp, lease)
        return Started(namesake, own + dead)


class Maintained(NamedTuple):
    """What a round of Maintain did."""

    lost_lease: bool
    """The runner's registration was gone (its lease expired), so it registered again."""
    dead: int
    """How many running jobs of dead runners it interrupted."""
    lost: int
    """How many jobs this runner claimed but never received that it interrupted."""


@dataclasses.dataclass(frozen=True, slots=True)
class Maintain:
    """The write that renews a runner's lease, interrupts stale jobs and prunes old ones.

    held is the ids of the jobs the runner's workers have. A runner whose
    heartbeat is older than lease is dead; finished jobs older than
    retention are deleted, a thousand at a time (None keeps them). The write
    was asked for at started, on contact's clock: stale jobs are interrupted
    only when contact says this runner may judge (see ``StoreContact``),
    since until then a stale heartbeat may be a peer that could not reach the
    store either, and a stale claim of its own may be one whose reply is
    still on its way.
    """

    name: str
    held: frozenset[str]
    lease: datetime.timedelta
    retention: datetime.timedelta | None
    clock: Clock
    contact: StoreContact
    started: float

    def __call__(self, q: Queries) -> Maintained:
        judge = self.contact.may_judge(self.started, time.monotonic())
        stamp = timestamp(self.clock())
        lost_lease = not q.heartbeat_runner(now=stamp, name=self.name)
        if lost_lease:
            q.register_runner(name=self.name, now=stamp)
        dead, lost = self._end_stale(q, stamp) if judge else (0, 0)
        if self.retention is not None:
            q.delete_finished_jobs(before=_before(stamp, self.retention), max_jobs=1000)
        return Maintained(lost_lease, dead, lost)

    def _end_stale(self, q: Queries, stamp: str) -> tuple[int, int]:
        """Interrupts dead runners' jobs, and the claims older than the lease it never received.

        Returns how many of each it interrupted.
        """
        dead = _end_dead_runners(q, self.name, stamp, self.lease.total_seconds())
        # A claim can commit while its reply is lost (a connection dropped at
        # COMMIT): the job runs under this name, but no worker has it. Once it
        # is older than the lease and still not held, it is interrupted, as a
        # dead runner's job would be. Its claim was stamped by this runner's
        # own clock, so the runner's clock measures its age.
        lost = [
            row
            for row in q.list_running_jobs(runner=self.name, before=_before(stamp, self.lease))
            if row.id not in self.held
        ]
        for row in lost:
            q.interrupt_job(error=MESSAGE_INTERRUPTED, now=stamp, id=row.id, attempt=row.attempt)
        return dead, len(lost)


@dataclasses.dataclass(frozen=True, slots=True)
class InterruptAttempts:
    """The write that interrupts jobs as a restart would, each while the claim of its attempt holds.

    attempts maps job ids to the attempts claimed; a job retries while
    attempts remain and otherwise fails with MESSAGE_INTERRUPTED. Returns
    how many it interrupted: a job recorded meanwhile is left as it is.
    """

    attempts: dict[str, int]
    clock: Clock

    def __call__(self, q: Queries) -> int:
        stamp = timestamp(self.clock())
        return sum(
            q.interrupt_job(error=MESSAGE_INTERRUPTED, now=stamp, id=job_id, attempt=attempt)
            for job_id, attempt in self.attempts.items()
        )


class DeleteRunner:
    """The write that deregisters a runner that stopped."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, q: Queries) -> None:
        q.delete_runner(name=self.name)
