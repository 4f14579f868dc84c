"""The runner's operations on the store: each a function of ``Queries`` run in one transaction.

Claims (flow control's included), outcomes, partial results, steps and
cancel requests; the runner's registration, heartbeat and crash recovery are in
``jobtable._runner.registration``. Like the store's operations
(``jobtable._operations``), each is a small object holding its parameters, so
that a write can be retried, logged or batched as a value. Their times come
from the store's clock: the ``now`` text their caller took as it built them.
"""

import dataclasses
import datetime
from collections.abc import Callable, Sequence
from typing import NamedTuple

from jobtable._engines.base import Queries, Statement
from jobtable._engines.dependencies import settle_dependents
from jobtable._engines.rows import ClaimedRow, Outcome
from jobtable._errors import NotRunning
from jobtable._job import MESSAGE_INTERNAL
from jobtable._workflow import FanOut

Clock = Callable[[], datetime.datetime]


@dataclasses.dataclass(frozen=True, slots=True)
class NextRunAt:
    """The read of what an idle claimer of queue waits for: a scheduled job, a rate window.

    It returns the earliest run_at among the scheduled jobs of queue (None:
    none), and, when flow is true and the queue has a rate, the seconds until
    its window admits another start (``FlowQueries.next_rate_opening``; None:
    no rate, a pause, or no start counted).
    """

    queue: str
    flow: bool
    now: str

    def __call__(self, q: Queries) -> tuple[datetime.datetime | None, float | None]:
        run_at = q.next_run_at(queue=self.queue)
        if not self.flow:
            return run_at, None
        flow = q.queue_flow(queue=self.queue, lock=False)
        if flow is None or flow.paused:
            return run_at, None
        period = flow.limits.rate_period
        if flow.limits.rate_limit is None or period is None:
            return run_at, None
        return run_at, q.next_rate_opening(queue=self.queue, period=period, now=self.now)


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


class RecordStep:
    """The write of a step's output for a running job; raises NotRunning when its claim is gone.

    One transaction: the insert is fenced by the claim, and a write retried
    after it landed (a lost reply) finds its own step and succeeds.
    """

    __slots__ = ("attempt", "job_id", "kind", "name", "now", "output")

    def __init__(self, job: ClaimedRow, name: str, output: str, now: str) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempt
        self.name = name
        self.output = output
        self.now = now

    def __call__(self, q: Queries) -> None:
        changed = q.record_job_step(
            name=self.name, output=self.output, now=self.now, id=self.job_id, attempt=self.attempt
        )
        if changed == 1:
            return
        steps = q.list_job_steps(job_id=self.job_id)
        if any(s.name == self.name and s.attempt == self.attempt for s in steps):
            return
        raise NotRunning(
            f"record step {self.name!r}: job {self.job_id} is not running under this claim"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ReadStep:
    """The read of the output job_id recorded for its step name (None: not recorded)."""

    job_id: str
    name: str

    def __call__(self, q: Queries) -> str | None:
        row = q.get_job_step(job_id=self.job_id, name=self.name)
        return None if row is None else row.output


def _in_flow(job: ClaimedRow) -> bool:
    """Whether job belongs to a workflow, whose end settles its dependents."""
    return job.workflow_id is not None


class Finish(NamedTuple):
    """How one attempt of a job of kind ends; the completer stores it (see ``Outcome``)."""

    outcome: Outcome
    kind: str
    adds: FanOut | None = None
    """The jobs the handler added to its workflow: stored if the outcome is, a success."""
    recorded: bool = False
    """Stored already, by the handler's sleep or wait: the completer has nothing to store."""

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self.outcome.id

    @classmethod
    def succeeded(cls, job: ClaimedRow, result: str) -> "Finish":
        """The attempt succeeded with result."""
        return cls(
            Outcome(job.id, job.attempt, "succeeded", result, None, None, _in_flow(job)),
            job.kind,
        )

    @classmethod
    def failed(cls, job: ClaimedRow, error: str, retry_at: str | None = None) -> "Finish":
        """The attempt failed with error: finally, or to be retried from retry_at on."""
        state = "failed" if retry_at is None else "queued"
        return cls(
            Outcome(job.id, job.attempt, state, None, error, retry_at, _in_flow(job)), job.kind
        )

    @classmethod
    def snoozed(cls, job: ClaimedRow, run_at: str) -> "Finish":
        """The handler asked for a later attempt, from run_at on."""
        return cls(
            Outcome(job.id, job.attempt, "queued", None, None, run_at, _in_flow(job)), job.kind
        )

    @classmethod
    def suspended(cls, job: ClaimedRow, run_at: str | None) -> "Finish":
        """The handler sleeps or waits: its job went back to its queue as it began (None).

        With run_at, the put-back was refused (the job's cancel was requested,
        or its claim is gone): a snooze from run_at, whose outcome the
        completer stores, settling the cancel, or finds fenced off.
        """
        if run_at is not None:
            return cls.snoozed(job, run_at)
        return cls(
            Outcome(job.id, job.attempt, "queued", None, None, None, _in_flow(job)),
            job.kind,
            recorded=True,
        )

    @classmethod
    def cancelled(cls, job: ClaimedRow) -> "Finish":
        """The job's cancel was requested and its handler stopped."""
        return cls(
            Outcome(job.id, job.attempt, "cancelled", None, None, None, _in_flow(job)), job.kind
        )

    @property
    def error(self) -> str | None:
        """The attempt's error, or None."""
        return self.outcome.error

    def traced(self, run_trace: str | None) -> "Finish":
        """This outcome, stored with run_trace, its attempt's run span (None: as it is)."""
        if run_trace is None:
            return self
        return self._replace(outcome=self.outcome._replace(run_trace=run_trace))

    def refused(self) -> "Finish":
        """The outcome that replaces this one when the database refused it: MESSAGE_INTERNAL.

        Final: the same outcome would be refused again.
        """
        outcome = self.outcome
        failed = Outcome(
            outcome.id, outcome.attempt, "failed", None, MESSAGE_INTERNAL, None, outcome.workflow
        )
        return Finish(failed, self.kind)


class FinishAndClaim(Statement[tuple[list[str], Sequence[ClaimedRow]]]):
    """The write that stores finished attempts' outcomes and claims up to max_jobs jobs of queue.

    Returns the ids of the jobs it finished and the jobs it claimed. With no
    outcomes it is a plain claim; with max_jobs 0, a plain record. With
    kinds, it claims only jobs of those kinds. Outcomes of workflows' jobs
    settle their dependents with them (``Queries.finish_and_claim_jobs``):
    on PostgreSQL in the statement that stores them, the claim then a
    statement of its own, which needs no atomicity with it.
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


class WorkflowFinishAndClaim:
    """A FinishAndClaim whose handlers added jobs to their workflows: one transaction.

    The added jobs are stored, and their dependencies settled again, by
    further statements in the transaction that records the adding job's
    success (``store_additions``), so it is no lone ``Statement``: an engine
    runs it between BEGIN and COMMIT.
    """

    __slots__ = ("op",)

    def __init__(self, op: FinishAndClaim) -> None:
        self.op = op

    def __call__(self, q: Queries) -> tuple[list[str], Sequence[ClaimedRow]]:
        hold_workflows(q, self.op.outcomes)
        finished, claimed = self.op(q)
        store_additions(q, self.op.outcomes, finished, self.op.now)
        return finished, claimed


def hold_workflows(q: Queries, outcomes: Sequence[Finish]) -> None:
    """Holds the workflows the successes of outcomes add jobs to: run before recording them.

    A cancel of such a workflow (``CancelWorkflow``) then commits wholly
    before the success is recorded, which sees its job's cancel request, or
    waits until the success committed, and finds the added jobs queued or
    pending. Held before any job's row, as the cancel holds them, so the two
    cannot deadlock; writes that hold a workflow so do not wait for each other.
    """
    held = {f.adds.id for f in outcomes if f.adds is not None and f.outcome.state == "succeeded"}
    for workflow_id in sorted(held):
        q.hold_workflow(id=workflow_id)


def store_additions(
    q: Queries, outcomes: Sequence[Finish], finished: Sequence[str], now: str
) -> None:
    """Stores the jobs the handlers of outcomes added, for each success that was recorded.

    Then settles each job's dependents again (an added job may wait for
    it), and cancels what a job added whose cancel was requested before its
    success was recorded (a cancel of the job, or of its workflow): those
    jobs never run, and the record shows them.
    """
    if not any(f.adds for f in outcomes):
        return
    recorded = set(finished)
    for f in outcomes:
        if f.adds is not None and f.outcome.state == "succeeded" and f.job_id in recorded:
            f.adds(q)
            settle_dependents(q, f.job_id, now)
            f.adds.cancel_if_requested(q)


def finish_and_claim(
    outcomes: Sequence[Finish],
    runner: str,
    queue: str,
    max_jobs: int,
    now: str,
    kinds: Sequence[str] | None = None,
) -> FinishAndClaim | WorkflowFinishAndClaim:
    """The FinishAndClaim of outcomes: a transaction of its own when a handler added jobs."""
    op = FinishAndClaim(outcomes, runner, queue, max_jobs, now, kinds)
    return WorkflowFinishAndClaim(op) if any(f.adds for f in outcomes) else op


class FlowClaim:
    """The write that stores outcomes and claims up to max_jobs jobs of queue within its limits.

    It reads the queue's flow control with the lock that serializes limited
    claims (see ``FlowQueries.queue_flow``), stores the outcomes first, so
    that the slots they free count, then claims what the limits allow. A
    queue without flow control is claimed as ``FinishAndClaim`` claims it.
    Returns the ids of the jobs it finished, the jobs it claimed, and
    whether the queue has flow control.
    """

    __slots__ = ("max_jobs", "now", "outcomes", "queue", "runner")

    def __init__(
        self, outcomes: Sequence[Finish], runner: str, queue: str, max_jobs: int, now: str
    ) -> None:
        self.outcomes = outcomes
        self.runner = runner
        self.queue = queue
        self.max_jobs = max_jobs
        self.now = now

    def __call__(self, q: Queries) -> tuple[list[str], Sequence[ClaimedRow], bool]:
        flow = q.queue_flow(queue=self.queue, lock=True)
        hold_workflows(q, self.outcomes)
        outcomes = [f.outcome for f in self.outcomes]
        if flow is None:
            finished, rows = q.finish_and_claim_jobs(
                outcomes=outcomes,
                runner=self.runner,
                queue=self.queue,
                now=self.now,
                max_jobs=self.max_jobs,
            )
            store_additions(q, self.outcomes, finished, self.now)
            return finished, rows, False
        finished = []
        if outcomes:
            finished, _ = q.finish_and_claim_jobs(
                outcomes=outcomes, runner=self.runner, queue=self.queue, now=self.now, max_jobs=0
            )
            store_additions(q, self.outcomes, finished, self.now)
        rows = q.claim_within_limits(
            flow=flow, runner=self.runner, queue=self.queue, now=self.now, max_jobs=self.max_jobs
        )
        return finished, rows, True


@dataclasses.dataclass(frozen=True, slots=True)
class HasFlow:
    """The read of whether queue has flow control (paused or limited), without a lock."""

    queue: str

    def __call__(self, q: Queries) -> bool:
        return q.queue_flow(queue=self.queue, lock=False) is not None


@dataclasses.dataclass(frozen=True, slots=True)
class PausedQueues:
    """The read of which of queues are paused, in their order, without a lock."""

    queues: tuple[str, ...]

    def __call__(self, q: Queries) -> list[str]:
        return [
            queue
            for queue in self.queues
            if (flow := q.queue_flow(queue=queue, lock=False)) is not None and flow.paused
        ]
