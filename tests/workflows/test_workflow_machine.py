"""Workflows and waits as a Hypothesis state machine, on a real store of each engine.

The machine enqueues small random workflows (2 to 6 jobs, each depending
on some earlier ones, some with ``on_failure="run"``, in random
priorities so that claim order and dependency order disagree), runs one
attempt at a time through the runner's own claim (``Runner.run_next``)
with an outcome it draws (succeed, ``Failure``, or another exception),
cancels jobs and workflows, retries failed and cancelled jobs (one at a
time, and every failed job at once with ``retry_failed``), deletes jobs
(by id, alone or as a bulk delete's), and
registers waits (a thread calling ``kind.wait``, or a task awaiting
``kind.await_result``) on random jobs. Some workflows share a name with a
concurrency limit of 1. It checks, after every step:

- a job starts only once every dependency succeeded, or, for one it opted
  in to with ``on_failure="run"``, ended;
- a job whose dependency (not opted in) failed, was cancelled, or was
  deleted before it succeeded never starts: it is cancelled, naming such a
  dependency as the reason, unless an operator cancelled it;
- a claim never takes a pending job;
- a pending job still waits for something: once every dependency is done
  it is queued (so every queued job is claimable);
- a queued job waits for nothing: every dependency is done (a retried
  dependency makes the jobs that counted its end wait again);
- a retry answers RETRIED exactly when no dependency the job needs failed
  or was cancelled, and BLOCKED, changing nothing, otherwise;
- the store's own tables are settled (``settled.unsettled``): no job is
  pending with nothing left to wait for, and every count of dependencies
  is exact;
- a limited workflow waiting for its slot has no job that started or is
  queued; one waits only while another limited workflow is unfinished; and
  at most one limited workflow is unfinished and admitted, unless an
  operator retried a job of one that had ended (which runs at once);

and at teardown, after ending every job, that every wait returned what the
job ended with: its typed result, ``JobFailed`` with its error, or
``JobCancelled``.

``test_machine_finds_*`` plant a fault in the system (in the settling of
dependents, the claim statement, or the wait's outcome) and check that the
machine fails with the message of the invariant that must catch it.
"""

import asyncio
import dataclasses
import importlib
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal

import hypothesis.strategies as st
import pytest
from finding import FIND_SETTINGS
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from machine_targets import Target, on_engine, sqlite_target
from pydantic import BaseModel
from settled import unsettled

import jobtable
from jobtable._engines import dependencies
from jobtable._operator import admin
from jobtable._wait import waiting

Outcome = Literal["succeed", "failure", "error"]
Status = jobtable.Status
ENDED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
BLOCKING = (Status.FAILED, Status.CANCELLED)
ON_FAILURE: dict[bool, Literal["run", "cancel"]] = {True: "run", False: "cancel"}
WAIT_LIMIT = 60.0
"""Seconds a wait may take: every job has ended before the teardown joins them, so only a
broken wake-up reaches it."""


class Out(BaseModel):
    """A job's typed result: its payload and the attempt's number."""

    n: int
    attempt: int


node = jobtable.Kind("node", int, Out, max_attempts=1)


@dataclasses.dataclass(frozen=True)
class Node:
    """One job of a drawn workflow: the earlier nodes it depends on, and those it opts in to."""

    after: tuple[int, ...]
    run_on_failure: tuple[int, ...]
    priority: int


@st.composite
def dags(draw: st.DrawFn) -> list[Node]:
    """A workflow of 2 to 6 jobs, each depending on a random subset of the earlier ones."""
    nodes: list[Node] = []
    for i in range(draw(st.integers(2, 6))):
        after = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        opted = [d for d in after if draw(st.sampled_from([False, False, True]))]
        nodes.append(Node(tuple(sorted(after)), tuple(sorted(opted)), draw(st.integers(0, 2))))
    return nodes


@dataclasses.dataclass
class Waiter:
    """One wait on a job: what it may return, and what it did."""

    job_id: str
    first_end: int  # the index into the job's ends of the first it may return
    outcome: object = None
    done: threading.Event = dataclasses.field(default_factory=threading.Event)


End = tuple[Status, object, str | None]
"""A job's end as the machine saw it: status, result and error."""


class WorkflowMachine(RuleBasedStateMachine):
    """Drives workflows through a runner and checks them against their dependencies."""

    make_target: Callable[[], Target] = staticmethod(sqlite_target)

    def __init__(self) -> None:
        super().__init__()
        self.target = self.make_target()
        self.store = jobtable.Store.open(self.target.open_target)
        self.loop = asyncio.new_event_loop()
        self.runner = jobtable.Runner(self.store, name="machine", workers=1, grace_period=0)
        self.runner.handler(node)(self.handle)
        # In enqueue order, so that a drawn index names the same job in every run.
        self.deps: dict[str, dict[str, bool]] = {}  # job -> its dependencies -> opted in
        self.workflows: dict[str, list[str]] = {}
        self.limited: set[str] = set()  # the workflows of the name limited to 1 at once
        self.slot_waits: set[str] = set()  # the limited ones waiting for a slot, as read
        self.loosened = False  # a retry revived an ended limited workflow: it runs at once
        self.status: dict[str, Status] = {}  # as read after the last step
        self.ends: dict[str, list[End]] = {}
        self.started: set[str] = set()
        self.by_operator: set[str] = set()  # cancelled by store.cancel or cancel_workflow
        # job -> the deleted dependencies it needed to succeed, and had not counted
        self.lost: dict[str, set[str]] = {}
        self.outcome: Outcome = "succeed"
        self.claimed_pending: list[str] = []
        self.early: list[str] = []
        self.waiters: list[Waiter] = []
        self.threads: list[threading.Thread] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def handle(self, ctx: jobtable.JobContext[Out], n: int) -> Out:
        """Notes the start, and what the job's dependencies were then, and ends as drawn."""
        if self.status.get(ctx.id) != Status.QUEUED:
            self.claimed_pending.append(f"{ctx.id} was {self.status.get(ctx.id)}")
        for dep, opted in self.deps[ctx.id].items():
            status = (await self.store.ainspect(dep)).status
            if status != Status.SUCCEEDED and not (opted and status in ENDED):
                self.early.append(f"{ctx.id} started while its dependency {dep} was {status}")
        for dep in self.lost.get(ctx.id, ()):
            self.early.append(f"{ctx.id} started while its dependency {dep} was deleted")
        self.started.add(ctx.id)
        if self.outcome == "failure":
            raise jobtable.Failure(f"failure {n}")
        if self.outcome == "error":
            raise RuntimeError("boom")
        return Out(n=n, attempt=ctx.attempt)

    def teardown(self) -> None:
        try:
            self.end_everything()
            self.check_waiters()
        finally:
            self.store.close()
            self.loop.close()
            self.target.drop()

    # Steps.

    @rule(dag=dags(), limited=st.booleans())
    def enqueue_workflow(self, dag: list[Node], limited: bool) -> None:
        name, limit = ("limited", 1) if limited else ("machine", None)
        wf = jobtable.Workflow(name, concurrency=limit)
        nodes: list[Any] = []
        for i, drawn in enumerate(dag):
            after = [
                jobtable.After(nodes[d], on_failure=ON_FAILURE[d in drawn.run_on_failure])
                for d in drawn.after
            ]
            nodes.append(wf.add(node, i, after=after, priority=drawn.priority))
        ids = [n.id for n in nodes]
        self.workflows[wf.enqueue(self.store)] = ids
        if limited:
            self.limited.add(wf.id)
        for job_id, drawn in zip(ids, dag, strict=True):
            self.deps[job_id] = {ids[d]: d in drawn.run_on_failure for d in drawn.after}
            self.ends[job_id] = []
        self.observe()

    @rule(outcome=st.sampled_from(["succeed", "succeed", "failure", "error"]))
    def run_one_attempt(self, outcome: Outcome) -> None:
        self.outcome = outcome
        ran = self.loop.run_until_complete(self.runner.run_next())
        # A claim of a pending job, or a start before the dependencies, is
        # left to the invariants that check for it after this step, so that
        # a planted fault is caught by the one invariant its test keeps.
        if ran is None:
            queued = [i for i, s in self.status.items() if s == Status.QUEUED]
            assert not queued, f"no job was claimed while {queued} were queued"
        self.observe()

    @precondition(lambda self: self.deps)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from(list(self.deps)))
        before = self.status[job_id]
        result = self.store.cancel(job_id)
        if before in (Status.PENDING, Status.QUEUED):
            assert result == jobtable.CancelResult.CANCELLED, (job_id, before, result)
            self.by_operator.add(job_id)
        else:
            assert result == jobtable.CancelResult.FINISHED, (job_id, before, result)
        self.observe()

    def retriable(self) -> list[str]:
        return [i for i, s in self.status.items() if s in BLOCKING]

    def revives(self, job_id: str) -> None:
        """Notes, before job_id's retry is noted, whether it revives an ended limited workflow."""
        for workflow_id in self.limited:
            ids = self.workflows[workflow_id]
            if job_id in ids and all(self.status[i] in ENDED for i in ids):
                self.loosened = True

    def retried(self, job_id: str) -> None:
        """Notes that job_id was retried: it starts anew, and may wait again (pending)."""
        self.by_operator.discard(job_id)
        self.started.discard(job_id)
        self.status[job_id] = Status.QUEUED  # a new end, even in the status it had

    @precondition(lambda self: self.retriable())
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """A retry runs a job again, unless a dependency it needs failed or was cancelled."""
        job_id = data.draw(st.sampled_from(self.retriable()))
        result = self.store.retry(job_id)
        if self.blockers(job_id):
            assert result == jobtable.RetryResult.BLOCKED, (job_id, result)
        else:
            assert result == jobtable.RetryResult.RETRIED, (job_id, result)
            self.revives(job_id)
            self.retried(job_id)
        self.observe()

    def deletable(self) -> list[str]:
        """The jobs a delete may take: every job no wait was registered on."""
        waited = {waiter.job_id for waiter in self.waiters}
        return [i for i in self.deps if i not in waited]

    @precondition(lambda self: self.deletable())
    @rule(data=st.data(), in_bulk=st.booleans())
    def delete(self, data: st.DataObject, in_bulk: bool) -> None:
        """A delete by id, alone or as a bulk delete's; the job leaves the model with it."""
        job_id = data.draw(st.sampled_from(self.deletable()))
        deleted = jobtable.DeleteResult.DELETED
        if in_bulk:
            assert self.store.delete_many([job_id]) == {job_id: deleted}, job_id
        else:
            assert self.store.delete(job_id) == deleted, job_id
        self.forget(job_id)
        self.observe()

    def forget(self, job_id: str) -> None:
        """Takes job_id out of the model, as its delete takes it out of its workflow.

        A dependent that needed it to succeed, and had not counted its
        success, loses it for good: it is blocked by it from now on.
        """
        gone = self.status.pop(job_id)
        del self.deps[job_id], self.ends[job_id]
        self.lost.pop(job_id, None)
        for ids in self.workflows.values():
            if job_id in ids:
                ids.remove(job_id)
        for dependent, deps in self.deps.items():
            opted = deps.pop(job_id, None)
            if opted is False and gone != Status.SUCCEEDED:
                self.lost.setdefault(dependent, set()).add(job_id)

    @precondition(lambda self: Status.FAILED in self.status.values())
    @rule()
    def retry_failed_in_bulk(self) -> None:
        failed = [i for i, s in self.status.items() if s == Status.FAILED]
        assert self.store.retry_failed() == len(failed), failed
        for job_id in failed:
            self.revives(job_id)
        for job_id in failed:
            self.retried(job_id)
        self.observe()

    @precondition(lambda self: self.workflows)
    @rule(data=st.data())
    def cancel_workflow(self, data: st.DataObject) -> None:
        workflow_id = data.draw(st.sampled_from(list(self.workflows)))
        unended = [i for i in self.workflows[workflow_id] if self.status[i] not in ENDED]
        assert self.store.cancel_workflow(workflow_id) == len(unended), workflow_id
        self.by_operator.update(unended)
        self.observe()

    @precondition(lambda self: self.deps)
    @rule(data=st.data(), in_thread=st.booleans())
    def wait(self, data: st.DataObject, in_thread: bool) -> None:
        """A wait on a random job, in a thread (kind.wait) or a task (await kind.await_result)."""
        job_id = data.draw(st.sampled_from(list(self.deps)))
        ends = len(self.ends[job_id])
        first = ends - 1 if self.status[job_id] in ENDED else ends
        waiter = Waiter(job_id, first)
        self.waiters.append(waiter)
        if in_thread:

            def wait_in_thread() -> None:
                try:
                    waiter.outcome = node.wait(self.store, job_id, timeout=WAIT_LIMIT)
                except jobtable.JobtableError as err:
                    waiter.outcome = err
                waiter.done.set()

            thread = threading.Thread(target=wait_in_thread, daemon=True)
            thread.start()
            self.threads.append(thread)
        else:

            async def wait_in_task() -> None:
                try:
                    waiter.outcome = await node.await_result(self.store, job_id, timeout=WAIT_LIMIT)
                except jobtable.JobtableError as err:
                    waiter.outcome = err
                waiter.done.set()

            self.tasks.append(self.loop.create_task(wait_in_task()))

    # What the machine sees of the jobs.

    def observe(self) -> None:
        """Reads every job, noting each end (a change into an ended status, or after a retry)."""
        for job_id, ends in self.ends.items():
            job = node.get(self.store, job_id)
            if job.status in ENDED and job.status != self.status.get(job_id):
                ends.append((job.status, job.result, job.error))
            self.status[job_id] = job.status
        self.slot_waits = {w for w in self.limited if self.store.workflow(w).waiting}

    def end_everything(self) -> None:
        """Cancels every workflow, so that every job ends and every wait must return."""
        for workflow_id in self.workflows:
            self.store.cancel_workflow(workflow_id)
        self.observe()

    def check_waiters(self) -> None:
        """Every wait returned one of the ends its job had since the wait began."""
        for thread in self.threads:
            thread.join(WAIT_LIMIT + 5)
        if self.tasks:
            gathered = asyncio.gather(*self.tasks, return_exceptions=True)
            self.loop.run_until_complete(gathered)
        for waiter in self.waiters:
            assert waiter.done.is_set(), f"a wait on {waiter.job_id} never returned"
            possible = self.ends[waiter.job_id][waiter.first_end :]
            got = waiter.outcome
            assert any(self.returns(end, got) for end in possible), (
                f"a wait returned the wrong thing: {got!r} for {waiter.job_id}, "
                f"which ended {possible}"
            )

    @staticmethod
    def returns(end: End, got: object) -> bool:
        """Whether a wait that got got returned end."""
        status, result, error = end
        if status == Status.SUCCEEDED:
            return isinstance(got, Out) and got == result
        if status == Status.FAILED:
            return isinstance(got, jobtable.JobFailed) and got.message == error
        return isinstance(got, jobtable.JobCancelled)

    # Invariants, checked after every step.

    @invariant()
    def no_job_started_before_its_dependencies(self) -> None:
        assert not self.early, f"a job started before its dependencies: {self.early}"

    @invariant()
    def pending_jobs_are_never_claimed(self) -> None:
        assert not self.claimed_pending, f"a claim took a pending job: {self.claimed_pending}"
        pending = {i for i, s in self.status.items() if s == Status.PENDING}
        ran = pending & self.started
        assert not ran, f"a claim took a pending job: {ran} are pending and ran"

    def blockers(self, job_id: str) -> list[str]:
        """The dependencies job_id needs to succeed that failed, were cancelled or were deleted."""
        deps = self.deps[job_id]
        ended = [d for d, opted in deps.items() if not opted and self.status[d] in BLOCKING]
        return ended + sorted(self.lost.get(job_id, ()))

    def blocker_named(self, dep: str) -> str:
        """How a job cancelled by dep names it."""
        return f"dependency {dep} {self.status[dep].value if dep in self.status else 'deleted'}"

    @invariant()
    def the_store_is_settled(self) -> None:
        breaches = unsettled(self.target.open_target)
        assert not breaches, f"the store is not settled: {breaches}"

    @invariant()
    def blocked_dependents_never_start(self) -> None:
        for job_id in self.deps:
            blockers = self.blockers(job_id)
            if not blockers:
                continue
            status = self.status[job_id]
            assert job_id not in self.started, f"blocked dependent {job_id} started: {blockers}"
            assert status == Status.CANCELLED, (
                f"blocked dependent {job_id} is {status} while {blockers} failed or were cancelled"
            )
            if job_id in self.by_operator:
                continue
            reason = self.store.inspect(job_id).cancelled_because
            named = [self.blocker_named(d) for d in blockers]
            assert reason in named, f"blocked dependent {job_id} was cancelled because {reason!r}"

    def waits_for(self, job_id: str) -> list[str]:
        """The dependencies of job_id not done: unended, or ended otherwise than it needs."""
        return [
            d
            for d, opted in self.deps[job_id].items()
            if self.status[d] not in ENDED or (not opted and self.status[d] != Status.SUCCEEDED)
        ]

    def unfinished(self, workflow_id: str) -> bool:
        return any(self.status[i] not in ENDED for i in self.workflows[workflow_id])

    @invariant()
    def a_limited_workflow_waits_only_for_its_slot(self) -> None:
        for workflow_id in self.slot_waits:
            ids = self.workflows[workflow_id]
            begun = [i for i in ids if i in self.started or self.status[i] == Status.QUEUED]
            assert not begun, f"{begun} of {workflow_id}, waiting for its slot, began"
        admitted = [w for w in self.limited - self.slot_waits if self.unfinished(w)]
        if self.slot_waits:
            assert admitted, f"{sorted(self.slot_waits)} wait for a slot that no workflow holds"
        if not self.loosened:
            assert len(admitted) <= 1, f"{admitted} hold the one slot at once"

    @invariant()
    def pending_jobs_wait_for_something(self) -> None:
        waiting = {i for w in self.slot_waits for i in self.workflows[w]}
        for job_id in self.deps:
            if self.status[job_id] == Status.PENDING and job_id not in waiting:
                assert self.waits_for(job_id), (
                    f"ready job {job_id} was left pending: its dependencies are done"
                )

    @invariant()
    def queued_jobs_are_ready(self) -> None:
        for job_id in self.deps:
            if self.status[job_id] == Status.QUEUED:
                waits_for = self.waits_for(job_id)
                assert not waits_for, f"queued job {job_id} still waits for {waits_for}"


@pytest.fixture
def machine(engine: str, request: pytest.FixtureRequest) -> type[WorkflowMachine]:
    """The machine class for the test's engine."""
    return on_engine(WorkflowMachine, engine, request)


# PostgreSQL examples cost a schema each, so it runs fewer.
EXAMPLES = {"sqlite": 100, "postgres": 30}


@pytest.mark.slow
def test_workflows_keep_their_invariants(machine: type[WorkflowMachine], engine: str) -> None:
    too_slow = [HealthCheck.too_slow, HealthCheck.filter_too_much]
    chosen = settings(
        max_examples=EXAMPLES[engine],
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=too_slow,
    )
    run_state_machine_as_test(machine, settings=chosen)


# The planted faults, each in the system, in this test only (one replaces
# the bulk retry's write). A fault in a
# generated statement is a pattern and its replacement (a pattern that
# matches no statement means the SQL changed and the fault is stale: the
# test says so); a fault in Python replaces settle_dependents everywhere it
# is called from. PostgreSQL settles in one statement (SettleDependents,
# and FinishWorkflowJobs for a runner's outcomes), so there the faults of
# the settling are planted in it.


def readies_on_failure(q: Any, job_id: str, now: str) -> None:
    """A settle that counts a failed or cancelled dependency as if it succeeded."""
    state = q.dep_state(id=job_id)
    if state is not None and state[0] in ("failed", "cancelled") and state[1] is not None:
        if q.release_dependents(dep=job_id, succeeded=True, now=now):
            q.notify_ready()
        q.mark_deps_done(dep=job_id, succeeded=True)
        return
    SETTLE(q, job_id, now)


def never_counts_success(q: Any, job_id: str, now: str) -> None:
    """A settle that skips the count of a dependency that succeeded: its dependents stay pending."""
    state = q.dep_state(id=job_id)
    if state is not None and state[0] == "succeeded":
        return
    SETTLE(q, job_id, now)


def bulk_retry_revives_only(op: Any, q: Any) -> int:
    """A bulk retry that revives the dependents of its retried jobs and settles nothing else."""
    count = int(q.requeue_failed_jobs(now=op.now, kind=op.kind, queue=op.queue))
    for job_id in q.failed_workflow_jobs(kind=op.kind, queue=op.queue):
        if q.requeue_job(now=op.now, id=job_id):
            count += 1
            dependencies.revive_dependents(q, job_id, op.now)
    return count


SETTLE = dependencies.settle_dependents
SETTLE_FAULTS: dict[str, Callable[[Any, str, str], None]] = {
    "readies dependents on failure": readies_on_failure,
    "never counts a success": never_counts_success,
}
SQL_FAULTS = {
    # The limit: an enqueue takes a slot however many are held.
    "admits beyond the limit": ("workflows", r"THEN 'waiting' ELSE", "THEN 'held' ELSE"),
    # The count: the first dependency to succeed queues its dependent.
    "skips the count": ("workflows", r"pending_deps = 1 THEN", "pending_deps >= 1 THEN"),
    # The claim: its status guard takes pending jobs too.
    "claims pending jobs": (
        "jobs",
        r"WHERE ready\.status = 'queued' AND ready\.scheduled",
        "WHERE ready.status IN ('queued', 'pending') AND ready.scheduled",
    ),
    # The reason: a dependent is cancelled without naming its dependency.
    "forgets the reason": (
        "workflows",
        r"SET status = 'cancelled', blocked_by = [^,]+,",
        "SET status = 'cancelled', blocked_by = NULL,",
    ),
}
POSTGRES_FAULTS = {
    "readies dependents on failure": (
        "workflows",
        r"status = 'succeeded' AS ok",
        "status IN ('succeeded', 'failed', 'cancelled') AS ok",
    ),
    "never counts a success": ("workflows", r"\(settling\.ok OR", "(false OR"),
    "skips the count": ("workflows", r"pending_deps = plan\.ends", "pending_deps >= plan.ends"),
    "forgets the reason": (
        "workflows",
        r"blocked_by = coalesce\(plan\.cause, jobs\.blocked_by\),",
        "blocked_by = NULL,",
    ),
}
# Each fault, the one invariant the machine checks for it (the others
# could catch some faults first), and that invariant's message.
FAULTS = {
    "readies dependents on failure": ("blocked_dependents_never_start", "blocked dependent"),
    "skips the count": (
        "no_job_started_before_its_dependencies",
        "started before its dependencies",
    ),
    "claims pending jobs": ("pending_jobs_are_never_claimed", "a claim took a pending job"),
    "forgets the reason": ("blocked_dependents_never_start", "was cancelled because None"),
    "never counts a success": ("pending_jobs_wait_for_something", "was left pending"),
    "bulk retry revives only": ("queued_jobs_are_ready", "still waits for"),
    "a delete forgets its dependents": ("the_store_is_settled", "the store is not settled"),
    "admits beyond the limit": (
        "a_limited_workflow_waits_only_for_its_slot",
        "hold the one slot at once",
    ),
}
# The settle invariant (tests/settled.py) catches several of these faults
# too: it is left out of the other faults' runs.
INVARIANTS = {name for name, _ in FAULTS.values()} | {"the_store_is_settled"}


def plant(engine: str, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Puts fault into the system, for this test only."""
    if fault == "bulk retry revives only":
        monkeypatch.setattr(admin.RetryFailedJobs, "__call__", bulk_retry_revives_only)
        return
    if fault == "a delete forgets its dependents":
        # The jobs that needed the deleted job keep counting it.
        monkeypatch.setattr(admin, "forget_deleted", lambda q, job_id: None)
        return
    if engine == "postgres" and fault in POSTGRES_FAULTS:
        plant_sql(engine, POSTGRES_FAULTS[fault], fault, monkeypatch)
        return
    if fault in SETTLE_FAULTS:
        # The engine's queries import settle_dependents when a store of it
        # first opens: imported now, so that its copy is replaced too.
        importlib.import_module(f"jobtable._engines.{engine}.queries")
        for name, module in list(sys.modules.items()):
            if name.startswith("jobtable") and getattr(module, "settle_dependents", None) is SETTLE:
                monkeypatch.setattr(module, "settle_dependents", SETTLE_FAULTS[fault])
        return
    plant_sql(engine, SQL_FAULTS[fault], fault, monkeypatch)


def plant_sql(
    engine: str, planted: tuple[str, str, str], fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewrites the statements of engine's generated module that planted's pattern matches."""
    where, pattern, replacement = planted
    module = importlib.import_module(f"jobtable.db.{engine}.{where}")
    hits = 0
    for constant, statement in vars(module).items():
        if constant.isupper() and isinstance(statement, str):
            changed, count = re.subn(pattern, replacement, statement)
            if count:
                monkeypatch.setattr(module, constant, changed)
                hits += count
    assert hits, f"the fault {fault!r} matches no statement of {module.__name__}: it is stale"


def checking_only(machine: type[WorkflowMachine], kept: str) -> type[WorkflowMachine]:
    """machine checking the invariant kept alone: the others become plain methods."""
    plain = {name: getattr(machine, name).__wrapped__ for name in INVARIANTS - {kept}}
    return type(f"{machine.__name__}Checking", (machine,), plain)


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_machine_finds_a_planted_fault(
    machine: type[WorkflowMachine], engine: str, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, message = FAULTS[fault]
    plant(engine, fault, monkeypatch)
    with pytest.raises(AssertionError, match=message):
        run_state_machine_as_test(checking_only(machine, kept), settings=FIND_SETTINGS)


@pytest.mark.slow
def test_machine_finds_a_wait_that_returns_the_wrong_outcome(
    machine: type[WorkflowMachine], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wait on a cancelled job raises JobFailed instead of JobCancelled.
    outcome = waiting.Waiting._outcome

    def wrong(self: Any, store: jobtable.Store, row: Any) -> Any:
        if row.status == "cancelled":
            raise jobtable.JobFailed(row.id, "cancelled")
        return outcome(self, store, row)

    monkeypatch.setattr(waiting.Waiting, "_outcome", wrong)
    with pytest.raises(AssertionError, match="a wait returned the wrong thing"):
        run_state_machine_as_test(machine, settings=FIND_SETTINGS)
