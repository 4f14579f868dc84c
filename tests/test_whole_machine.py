"""Workflows, flow control, operator actions and runner crashes together, as one state machine.

The machine drives one queue of a fresh store per example (a SQLite file,
or a PostgreSQL schema): it enqueues workflows (fan-out, fan-in, edges
with ``on_failure="run"``, nodes fed by a dependency's result) and plain
and sequenced jobs with partition keys; claims with the runner's own
claim (``FlowClaim``), so that jobs stay running between steps, and ends
them with an outcome it draws; crashes a runner (a claim by a runner that
then restarts, which interrupts its jobs through the real recovery path);
pauses and resumes the queue and changes its limits at run time; cancels,
retries and deletes jobs, alone and in bulk; and waits on jobs in threads.
After every step it checks each invariant of tests/invariants.py against
the store's own tables, and at teardown, after every job ended, that
every wait returned its job's end.

``test_a_*_is_caught`` plant one fault per invariant (a direct UPDATE
through a raw connection that breaks it) and show that its checker fails.
"""

import dataclasses
import datetime
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import invariants
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

import jobtable
from jobtable._engines.rows import Outcome
from jobtable._operator import admin
from jobtable._runner.registration import StartRunner
from jobtable._runner.run_operations import Finish, FlowClaim
from jobtable._values import timestamp

QUEUE = "whole"
RUNNER = "machine"
CRASHY = "crashy"
PERIOD = datetime.timedelta(hours=1)
KEYS = [None, "a", "b"]
WAIT_LIMIT = 60.0

work = jobtable.Kind("work", int, int, queue=QUEUE, max_attempts=2)
steps = jobtable.Kind(
    "steps", int, int, queue=QUEUE, sequence=jobtable.Sequence(on_failure="block")
)
KINDS = {work.name: work, steps.name: steps}


@dataclasses.dataclass(frozen=True)
class Node:
    """One node of a drawn workflow: its dependencies, those opted in, or the one that feeds it."""

    after: tuple[int, ...]
    opted: tuple[int, ...]
    fed_by: int | None


@st.composite
def dags(draw: st.DrawFn) -> list[Node]:
    """A workflow of 2 to 5 nodes over earlier ones: fan-out, fan-in, opted-in and fed nodes."""
    nodes: list[Node] = []
    for i in range(draw(st.integers(2, 5))):
        if i and draw(st.integers(0, 3)) == 0:
            nodes.append(Node((), (), draw(st.integers(0, i - 1))))
            continue
        after = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        opted = [d for d in after if draw(st.booleans())]
        nodes.append(Node(tuple(sorted(after)), tuple(opted), None))
    return nodes


limits = st.fixed_dictionaries(
    {
        "concurrency": st.none() | st.integers(1, 3),
        "partition_limit": st.none() | st.integers(1, 2),
        "rate": st.none() | st.integers(2, 8),
        "per_key": st.booleans(),
    }
).filter(
    lambda chosen: any(
        chosen[name] is not None for name in ("concurrency", "partition_limit", "rate")
    )
)


CANCEL_ANSWERS = {
    "queued": jobtable.CancelResult.CANCELLED,
    "pending": jobtable.CancelResult.CANCELLED,
    "running": jobtable.CancelResult.REQUESTED,
    "succeeded": jobtable.CancelResult.FINISHED,
    "failed": jobtable.CancelResult.FINISHED,
    "cancelled": jobtable.CancelResult.FINISHED,
}
"""What a cancel answers for a job in each status."""


class WholeMachine(RuleBasedStateMachine):
    """Drives the real store through every feature at once; the invariants read its tables."""

    make_target: Callable[[], Target] = staticmethod(sqlite_target)

    def __init__(self) -> None:
        super().__init__()
        self.target = self.make_target()
        self.store = jobtable.Store.open(self.target.open_target)
        self.kind_of: dict[str, str] = {}  # every job in enqueue order -> its kind's name
        self.in_workflow: set[str] = set()
        self.workflows: list[str] = []
        self.attempts: dict[str, tuple[int, str]] = {}  # running job -> attempt, runner
        self.started: list[str] = []  # the jobs the last claim started
        self.waits: list[invariants.Wait] = []
        self.threads: list[threading.Thread] = []
        # The machine's runner is alive through the example: a crashed runner's
        # restart interrupts its own jobs and those of dead runners, never these.
        self.store.engine.write(
            StartRunner(RUNNER, datetime.timedelta(hours=1), self.store.clock, None)
        )

    def teardown(self) -> None:
        try:
            self.end_everything()
            for thread in self.threads:
                thread.join(WAIT_LIMIT + 5)
            for wait in self.waits:
                wait.ended = self.store.inspect(wait.job_id).status.value
            breaches = invariants.unanswered(self.waits)
            assert not breaches, breaches
        finally:
            self.store.close()
            self.target.drop()

    def now(self) -> str:
        return timestamp(self.store.clock())

    def status(self, job_id: str) -> str:
        return self.store.inspect(job_id).status.value

    def with_status(self, *statuses: str) -> list[str]:
        return [i for i in self.kind_of if self.status(i) in statuses]

    # Creating jobs.

    @rule(dag=dags())
    def enqueue_workflow(self, dag: list[Node]) -> None:
        wf = jobtable.Workflow("whole")
        nodes: list[Any] = []
        for i, drawn in enumerate(dag):
            if drawn.fed_by is not None:
                nodes.append(wf.add(work, nodes[drawn.fed_by]))
                continue
            after = [
                jobtable.After(nodes[d], on_failure="run" if d in drawn.opted else "cancel")
                for d in drawn.after
            ]
            nodes.append(wf.add(work, i, after=after))
        self.workflows.append(wf.enqueue(self.store))
        for made in nodes:
            self.kind_of[made.id] = work.name
            self.in_workflow.add(made.id)

    @rule(
        sequenced=st.booleans(),
        partition=st.sampled_from(KEYS),
        count=st.integers(1, 3),
    )
    def enqueue(self, sequenced: bool, partition: str | None, count: int) -> None:
        kind = steps if sequenced else work
        skey = "s" if sequenced else None
        ids = kind.enqueue_many(
            self.store, list(range(count)), partition_key=partition, sequence_key=skey
        )
        for job_id in ids:
            self.kind_of[job_id] = kind.name

    # Running them.

    def claim_as(self, runner: str, max_jobs: int) -> None:
        _, rows, _ = self.store.engine.write(FlowClaim((), runner, QUEUE, max_jobs, self.now()))
        assert len(rows) <= max_jobs, "a claim took more jobs than it asked for"
        self.started = [row.id for row in rows]
        for row in rows:
            self.attempts[row.id] = (row.attempt, runner)

    @rule(max_jobs=st.integers(1, 3))
    def claim(self, max_jobs: int) -> None:
        self.claim_as(RUNNER, max_jobs)

    @rule(max_jobs=st.integers(1, 3))
    def claim_again(self, max_jobs: int) -> None:
        # A second rule for the claim, so that claims are many of the steps.
        self.claim_as(RUNNER, max_jobs)

    def running(self, runner: str) -> list[str]:
        return [i for i, (_, by) in self.attempts.items() if by == runner]

    @precondition(lambda self: self.running(RUNNER))
    @rule(data=st.data(), outcome=st.sampled_from(["succeeded", "succeeded", "failed", "retry"]))
    def finish(self, data: st.DataObject, outcome: str) -> None:
        job_id = data.draw(st.sampled_from(self.running(RUNNER)))
        attempt, _ = self.attempts.pop(job_id)
        stamp = self.now()
        state = "queued" if outcome == "retry" else outcome
        ending = Outcome(
            job_id,
            attempt,
            state,
            "1" if state == "succeeded" else None,
            "it failed" if state == "failed" else None,
            stamp if state == "queued" else None,
            workflow=job_id in self.in_workflow,
        )
        op = FlowClaim([Finish(ending, self.kind_of[job_id])], RUNNER, QUEUE, 0, stamp)
        self.store.engine.write(op)
        self.started = []

    @rule(max_jobs=st.integers(1, 2))
    def crash_a_runner(self, max_jobs: int) -> None:
        """A runner claims, dies, and restarts under its name: its jobs are interrupted."""
        self.claim_as(CRASHY, max_jobs)
        self.check_starts()
        self.store.engine.write(
            StartRunner(CRASHY, datetime.timedelta(hours=1), self.store.clock, None)
        )
        for job_id in self.running(CRASHY):
            del self.attempts[job_id]
        self.started = []

    # Flow control, changed at run time.

    @rule(paused=st.booleans())
    def pause(self, paused: bool) -> None:
        (self.store.pause if paused else self.store.resume)(QUEUE)
        self.started = []

    @rule(chosen=limits)
    def set_limits(self, chosen: dict[str, Any]) -> None:
        rate = chosen["rate"]
        self.store.set_limits(
            QUEUE,
            concurrency=chosen["concurrency"],
            partition_limit=chosen["partition_limit"],
            rate=None
            if rate is None
            else jobtable.Rate(rate, per=PERIOD, per_key=chosen["per_key"]),
        )
        self.started = []

    @rule()
    def clear_limits(self) -> None:
        self.store.clear_limits(QUEUE)
        self.started = []

    # Operator actions.

    def waited(self) -> set[str]:
        return {wait.job_id for wait in self.waits}

    @precondition(lambda self: self.kind_of)
    @rule(data=st.data(), in_bulk=st.booleans())
    def cancel(self, data: st.DataObject, in_bulk: bool) -> None:
        job_id = data.draw(st.sampled_from(list(self.kind_of)))
        before = self.status(job_id)
        many = self.store.cancel_many
        answer = many([job_id])[job_id] if in_bulk else self.store.cancel(job_id)
        # The answer says what the cancel did: nothing changes a job between
        # the machine's steps.
        assert answer is CANCEL_ANSWERS[before], (job_id, before, answer)
        if answer is jobtable.CancelResult.CANCELLED:
            assert self.status(job_id) == "cancelled"
        self.started = []

    @precondition(lambda self: self.workflows)
    @rule(data=st.data())
    def cancel_workflow(self, data: st.DataObject) -> None:
        self.store.cancel_workflow(data.draw(st.sampled_from(self.workflows)))
        self.started = []

    @precondition(lambda self: self.kind_of)
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        ended = [i for i in self.with_status("failed", "cancelled") if i not in self.waited()]
        if ended:
            job_id = data.draw(st.sampled_from(ended))
            before = self.status(job_id)
            self.answers_retry(job_id, before, self.store.retry(job_id))
        self.started = []

    def answers_retry(self, job_id: str, before: str, answer: jobtable.RetryResult) -> None:
        """Checks a retry's answer against the job as it left it.

        RETRIED only when the job left failed or cancelled (queued again, or
        pending for a dependency that runs again); BLOCKED only for a job of
        a workflow that stayed as it was, its record naming a dependency
        that blocks it (failed, cancelled or deleted).
        """
        record = self.store.inspect(job_id)
        if answer is jobtable.RetryResult.RETRIED:
            assert record.status.value in ("queued", "pending"), (job_id, before, record.status)
            return
        assert answer is jobtable.RetryResult.BLOCKED, (job_id, before, answer)
        assert record.status.value == before, (job_id, before, record.status)
        assert job_id in self.in_workflow
        assert record.blocked_by, (job_id, "BLOCKED, but its record names no dependency")
        deps = {dep.id for dep in (record.workflow.dependencies if record.workflow else [])}
        for reason in record.blocked_by:
            _, dep, how = reason.split()
            assert how == "deleted" or dep in deps, (job_id, reason, deps)

    @rule()
    def retry_failed_in_bulk(self) -> None:
        failed = self.with_status("failed")
        if not self.waited() & set(failed):
            count = self.store.retry_failed()
            # Its count is the jobs that left failed; each one left failed is
            # blocked, as a retry of it alone would answer.
            kept = [i for i in failed if self.status(i) == "failed"]
            assert count == len(failed) - len(kept), (count, failed, kept)
            for job_id in kept:
                assert self.store.retry(job_id) is jobtable.RetryResult.BLOCKED, job_id
                self.answers_retry(job_id, "failed", jobtable.RetryResult.BLOCKED)
        self.started = []

    @precondition(lambda self: self.kind_of)
    @rule(data=st.data(), in_bulk=st.booleans())
    def delete(self, data: st.DataObject, in_bulk: bool) -> None:
        ended = [
            i
            for i in self.with_status("succeeded", "failed", "cancelled")
            if i not in self.waited()
        ]
        if ended:
            job_id = data.draw(st.sampled_from(ended))
            if in_bulk:
                answer = self.store.delete_many([job_id])[job_id]
            else:
                answer = self.store.delete(job_id)
            # An ended job is never running: the delete answers DELETED and it is gone.
            assert answer is jobtable.DeleteResult.DELETED, (job_id, answer)
            with pytest.raises(jobtable.JobNotFound):
                self.store.inspect(job_id)
            del self.kind_of[job_id]
            self.in_workflow.discard(job_id)
        self.started = []

    @precondition(lambda self: self.kind_of)
    @rule(data=st.data())
    def wait(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from(list(self.kind_of)))
        if self.status(job_id) in ("failed", "cancelled"):
            return  # a retry of it (in bulk) would give the wait a second end
        wait = invariants.Wait(job_id)
        kind = KINDS[self.kind_of[job_id]]

        def wait_in_thread() -> None:
            try:
                wait.outcome = kind.wait(self.store, job_id, timeout=WAIT_LIMIT)
            except jobtable.JobtableError as err:
                wait.outcome = err
            wait.returned = True

        thread = threading.Thread(target=wait_in_thread, daemon=True)
        thread.start()
        self.waits.append(wait)
        self.threads.append(thread)
        self.started = []

    def end_everything(self) -> None:
        """Ends every job: the running ones as interrupted, the rest cancelled."""
        for runner in (RUNNER, CRASHY):
            self.store.engine.write(
                StartRunner(runner, datetime.timedelta(hours=1), self.store.clock, None)
            )
        for job_id in self.kind_of:
            if self.status(job_id) in ("queued", "pending"):
                self.store.cancel(job_id)

    # Invariants, after every step.

    def check_starts(self) -> None:
        target = self.target.open_target
        for check in (invariants.over_limits, invariants.early_starts, invariants.out_of_sequence):
            breaches = check(target, self.started)
            assert not breaches, breaches

    @invariant()
    def starts_keep_limits_dependencies_and_sequences(self) -> None:
        self.check_starts()

    @invariant()
    def one_job_of_a_sequence_runs(self) -> None:
        breaches = invariants.two_running_in_a_sequence(self.target.open_target)
        assert not breaches, breaches

    @invariant()
    def settled(self) -> None:
        breaches = invariants.not_settled(self.target.open_target)
        assert not breaches, breaches


@pytest.fixture
def machine(engine: str, request: pytest.FixtureRequest) -> type[WholeMachine]:
    """The machine class for the test's engine."""
    return on_engine(WholeMachine, engine, request)


MACHINE_SETTINGS = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


FAULT_SETTINGS = settings(FIND_SETTINGS, max_examples=300, stateful_step_count=30)
"""A planted fault's run: examples enough to reach the fault, stopping at the first."""


@pytest.mark.slow
def test_the_whole_keeps_its_invariants(machine: type[WholeMachine]) -> None:
    run_state_machine_as_test(machine, settings=MACHINE_SETTINGS)


# One planted fault per invariant: a direct UPDATE that breaks it, through
# a raw connection, and the checker that must then name it.


@pytest.fixture
def target(engine: str, request: pytest.FixtureRequest) -> Any:
    """A fresh store on the test's engine, and its target, closed and dropped after the test."""
    made = on_engine(WholeMachine, engine, request).make_target()
    store = jobtable.Store.open(made.open_target)
    yield store, made.open_target
    store.close()
    made.drop()


def corrupt(target: str, statement: str) -> None:
    """Runs statement on the database at target, behind the store's back."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(statement)
        return
    with sqlite3.connect(target) as lite:
        lite.execute(statement)
    lite.close()


def chain(store: jobtable.Store) -> tuple[str, str]:
    """A workflow of two jobs, the second after the first."""
    wf = jobtable.Workflow("planted")
    first = wf.add(work, 1)
    second = wf.add(work, 2, after=[first])
    wf.enqueue(store)
    return first.id, second.id


def claim(store: jobtable.Store, max_jobs: int) -> list[str]:
    stamp = timestamp(store.clock())
    _, rows, _ = store.engine.write(FlowClaim((), RUNNER, QUEUE, max_jobs, stamp))
    return [row.id for row in rows]


@pytest.mark.parametrize("limit", ["concurrency", "partition_limit", "rate"])
def test_a_start_past_a_limit_is_caught(target: Any, limit: str) -> None:
    store, at = target
    rate = jobtable.Rate(1, per=PERIOD) if limit == "rate" else None
    store.set_limits(
        QUEUE,
        concurrency=1 if limit == "concurrency" else None,
        partition_limit=1 if limit == "partition_limit" else None,
        rate=rate,
    )
    first, second = work.enqueue_many(store, [1, 2], partition_key="a")
    assert claim(store, 2) == [first]
    assert invariants.over_limits(at, [first]) == []
    corrupt(at, f"UPDATE jobs SET status = 'running' WHERE id = '{second}'")
    if limit == "rate":
        corrupt(
            at,
            "INSERT INTO queue_starts SELECT queue, partition_key, started_at FROM queue_starts",
        )
    word = {"concurrency": "concurrency", "partition_limit": "partition", "rate": "rate"}[limit]
    assert any(b.startswith(word) for b in invariants.over_limits(at, [second]))


def test_a_start_before_a_dependency_is_caught(target: Any) -> None:
    store, at = target
    _, second = chain(store)
    assert invariants.early_starts(at, [second]) == []
    corrupt(at, f"UPDATE jobs SET status = 'running', pending_deps = 0 WHERE id = '{second}'")
    assert invariants.early_starts(at, [second]) != []


def test_a_start_out_of_sequence_is_caught(target: Any) -> None:
    store, at = target
    first, second = steps.enqueue_many(store, [1, 2], sequence_key="s")
    assert invariants.out_of_sequence(at, [second]) == []
    corrupt(at, f"UPDATE jobs SET status = 'running' WHERE id = '{second}'")
    assert invariants.out_of_sequence(at, [second]) != []
    corrupt(at, f"UPDATE jobs SET status = 'running' WHERE id = '{first}'")
    assert invariants.two_running_in_a_sequence(at) != []


def test_a_pending_job_with_nothing_to_wait_for_is_caught(target: Any) -> None:
    store, at = target
    _, second = chain(store)
    assert invariants.not_settled(at) == []
    corrupt(at, f"UPDATE jobs SET pending_deps = 0 WHERE id = '{second}'")
    assert any("counts 0" in b for b in invariants.not_settled(at))
    corrupt(at, "UPDATE job_deps SET done = true")
    assert any("nothing left to wait for" in b for b in invariants.not_settled(at))


def test_a_wrong_count_of_dependencies_is_caught(target: Any) -> None:
    store, at = target
    chain(store)
    corrupt(at, "UPDATE jobs SET pending_deps = pending_deps + 1")
    assert any("dependencies not yet counted" in b for b in invariants.not_settled(at))


def test_an_unanswered_or_wrongly_answered_waiter_is_caught() -> None:
    assert invariants.unanswered([invariants.Wait("j", True, 1, "succeeded")]) == []
    assert invariants.unanswered([invariants.Wait("j")]) != []
    wrong = invariants.Wait("j", True, 1, "cancelled")
    assert invariants.unanswered([wrong]) != []


def _answers_retried_when_blocked(
    real: Callable[[Any, Any], jobtable.RetryResult],
) -> Callable[[Any, Any], jobtable.RetryResult]:
    def call(self: Any, q: Any) -> jobtable.RetryResult:
        answer = real(self, q)
        return jobtable.RetryResult.RETRIED if answer is jobtable.RetryResult.BLOCKED else answer

    return call


@pytest.mark.slow
def test_a_retry_that_answers_retried_but_left_the_job_as_it_was_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The planted fault: a retry refused as blocked answers RETRIED, as a
    # retry of a dependent whose dependency still failed once did.
    monkeypatch.setattr(
        admin.RetryJob, "__call__", _answers_retried_when_blocked(admin.RetryJob.__call__)
    )
    with pytest.raises(AssertionError, match="pending"):
        run_state_machine_as_test(WholeMachine, settings=FAULT_SETTINGS)
