"""The job lifecycle as a Hypothesis state machine, on a real store of each engine.

The machine enqueues jobs whose payload scripts what the handler does
(take steps, publish partial results, then succeed, fail with a Failure,
raise another exception, or crash: the runner stops under it and the
handler raises), retries failed jobs as an operator does, runs
them one at a time through the runner's own claim-and-run path
(``Runner.run_next``) or all at once through the real hot path (``start``
with several workers: the claimer, the workers, the completer, and outcomes
riding on the next claim), restarts the runner, and reads jobs back. After
every step it checks the invariants against a model:

- a job only moves queued → running → succeeded or failed, and a finished
  job never changes;
- ``error`` is set exactly when the job failed;
- ``result`` is the last published partial or the final result;
- claims come in enqueue order; no job is lost, duplicated or run more
  than once per operator retry;
- a step that completed never runs again in a later attempt: the later
  attempt gets its recorded output, and the job's recorded steps are
  exactly those that completed;
- no text of a handler's exception is anywhere in the database (on SQLite,
  in the database file and its WAL).

``test_machine_finds_*`` swap in a deliberately broken step, defined here
only, and check that the machine fails: the invariants can fail. One of them
breaks the system itself, not the machine: the engine's claim statement
loses its status guard, and the runs-twice check must catch it.
"""

import asyncio
import dataclasses
import hashlib
import secrets
from collections.abc import Callable
from typing import Literal

import hypothesis.strategies as st
import pytest
from finding import FIND_SETTINGS
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from machine_targets import Target, on_engine, sqlite_target
from pydantic import BaseModel
from seam import engine_of, now

import jobtable
from jobtable._engines.postgres import claim_cursor
from jobtable._engines.rows import NewJob

Outcome = Literal["succeed", "failure", "error", "crash"]
RUNNER_NAME = "machine"


class Script(BaseModel):
    """What the handler does with this job."""

    seed: int
    steps: int
    publishes: list[int]
    outcome: Outcome
    final: int


def secret_of(script: Script) -> str:
    """The secret the handler puts in its exception text: never in the payload, never stored."""
    digest = hashlib.sha256(f"secret-{script.seed}".encode()).hexdigest()[:24]
    return f"SECRET{digest}"


scripts = st.builds(
    Script,
    seed=st.integers(0, 2**31),
    steps=st.integers(0, 2),
    publishes=st.lists(st.integers(-1000, 1000), max_size=3),
    outcome=st.sampled_from(["succeed", "failure", "error", "crash"]),
    final=st.integers(-1000, 1000),
)


calm_scripts = scripts.filter(lambda script: script.outcome != "crash")
"""Scripts whose handler does not stop its runner."""


@dataclasses.dataclass
class ModelJob:
    """What the model expects of one job."""

    id: str
    script: Script
    status: jobtable.Status = jobtable.Status.QUEUED
    result: int | None = None
    error: str | None = None
    seen: list[jobtable.Status] = dataclasses.field(default_factory=list)


class LifecycleMachine(RuleBasedStateMachine):
    """Drives a runner and a model side by side; subclasses choose the database."""

    make_target: Callable[[], Target] = staticmethod(sqlite_target)

    jobs = Bundle("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.target = self.make_target()
        self.store = jobtable.Store.open(self.target.open_target)
        self.loop = asyncio.new_event_loop()
        self.model: dict[str, ModelJob] = {}
        self.order: list[str] = []  # enqueue order
        self.runs: dict[str, int] = {}
        self.retries: dict[str, int] = {}  # operator retries of each job
        self.step_runs: dict[tuple[str, str], int] = {}  # each step function's runs
        self.contexts: dict[str, jobtable.JobContext[int]] = {}
        self.crashed = False
        self.runner, self.kind = self.new_runner()

    def teardown(self) -> None:
        self.store.close()
        self.loop.close()
        self.target.drop()

    def new_runner(self, workers: int = 1) -> tuple[jobtable.Runner, jobtable.Kind[Script, int]]:
        runner = jobtable.Runner(self.store, name=RUNNER_NAME, workers=workers, grace_period=0)

        async def handle(ctx: jobtable.JobContext[int], script: Script) -> int:
            self.runs[ctx.id] = self.runs.get(ctx.id, 0) + 1
            self.contexts[ctx.id] = ctx
            # Yields once, so that on the hot path the other workers' jobs are
            # under way too and the claimer waits for a slot to free.
            await asyncio.sleep(0)
            for n in range(script.steps):
                output = await ctx.step(f"s{n}", self.step_of(ctx.id, f"s{n}"), script.seed)
                assert output == script.seed + n, "a step's recorded output came back changed"
            for partial in script.publishes:
                await ctx.apublish(partial)
            if script.outcome == "failure":
                raise jobtable.Failure(f"failure {script.final}")
            if script.outcome == "error":
                raise RuntimeError(f"boom {secret_of(script)}")
            if script.outcome == "crash":
                runner.stop()
                raise RuntimeError(f"crash {secret_of(script)}")
            return script.final

        return runner, runner.register("script", handle)

    def step_of(self, job_id: str, name: str) -> Callable[[int], int]:
        """The function of job_id's step name: counts its runs, returns seed plus its number."""

        def step(seed: int) -> int:
            self.step_runs[job_id, name] = self.step_runs.get((job_id, name), 0) + 1
            return seed + int(name[1:])

        return step

    # Steps.

    @rule(target=jobs, script=scripts)
    def enqueue(self, script: Script) -> str:
        job_id = self.kind.enqueue(script)
        self.add(job_id, script)
        return job_id

    @rule(batch=st.lists(scripts, min_size=1, max_size=4))
    def enqueue_many(self, batch: list[Script]) -> None:
        ids = self.kind.enqueue_many(batch)
        assert len(set(ids)) == len(batch)
        for job_id, script in zip(ids, batch, strict=True):
            self.add(job_id, script)

    def add(self, job_id: str, script: Script) -> None:
        assert job_id not in self.model, "an id was given twice"
        self.model[job_id] = ModelJob(job_id, script)
        self.order.append(job_id)

    def claim_and_run(self) -> str | None:
        """The step under test: the runner's own claim and run of the oldest queued job."""
        return self.loop.run_until_complete(self.runner.run_next())

    @precondition(lambda self: not self.crashed)
    @rule()
    def run_next(self) -> None:
        queued = self.queued()
        ran = self.claim_and_run()
        self.check_each_ran_once()
        self.check_steps_ran_once()
        if not queued:
            assert ran is None, f"claimed {ran} with no job queued"
            return
        assert ran == queued[0], "claims must come in enqueue order"
        self.expect_ran(ran)

    def queued(self) -> list[str]:
        """The model's queued jobs, in enqueue order."""
        return [i for i in self.order if self.model[i].status == jobtable.Status.QUEUED]

    def expect_ran(self, job_id: str) -> None:
        """Moves the model's job on as its script says, once its handler ran."""
        job = self.model[job_id]
        script = job.script
        if script.publishes:
            job.result = script.publishes[-1]
        if script.outcome == "succeed":
            job.status, job.result = jobtable.Status.SUCCEEDED, script.final
        elif script.outcome == "failure":
            job.status, job.error = jobtable.Status.FAILED, f"failure {script.final}"
        elif script.outcome == "error":
            job.status, job.error = jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL
        else:
            job.status = jobtable.Status.RUNNING
            self.crashed = True

    def check_each_ran_once(self) -> None:
        """The runs-twice check: no handler ran more than once for a job, or per retry of it."""
        twice = {
            job_id: count
            for job_id, count in self.runs.items()
            if count > 1 + self.retries.get(job_id, 0)
        }
        assert not twice, f"jobs ran twice: {twice}"

    # A crash stops the runner under its peers, which leaves them running or
    # finished by a race: the hot path runs only queues without one.
    @precondition(
        lambda self: (
            not self.crashed and all(self.model[i].script.outcome != "crash" for i in self.queued())
        )
    )
    @rule(workers=st.integers(2, 3), batch=st.lists(calm_scripts, max_size=8))
    def run_all_with_workers(self, workers: int, batch: list[Script]) -> None:
        """The real hot path: enqueue batch, start several workers, wait until the queue is done.

        More jobs than workers make a finished job's outcome ride on the
        claim that fills its slot; the rest go through the completer.
        """
        if batch:
            for job_id, script in zip(self.kind.enqueue_many(batch), batch, strict=True):
                self.add(job_id, script)
        queued = self.queued()
        runner, _ = self.new_runner(workers)

        async def done() -> bool:
            if any(count > 1 + self.retries.get(i, 0) for i, count in self.runs.items()):
                return True  # a fault: stop now, the check below names it
            finished = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED)
            statuses = [(await runner.aget(i)).status for i in queued]
            return all(status in finished for status in statuses)

        async def run_until_done() -> bool:
            await runner.start()
            try:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + DRAIN_LIMIT
                while not await done():
                    if loop.time() > deadline:
                        return False
                    await asyncio.sleep(0.005)
                return True
            finally:
                runner.stop()
                await runner.wait()

        drained = self.loop.run_until_complete(run_until_done())
        self.check_each_ran_once()
        self.check_steps_ran_once()
        assert drained, f"{workers} workers did not finish {queued} in {DRAIN_LIMIT} s"
        assert set(queued) <= set(self.runs), "every queued job ran"
        for job_id in queued:
            self.expect_ran(job_id)

    @rule()
    def restart(self) -> None:
        """A new process of the same name starts: it fails what the last one left running."""
        runner, _ = self.new_runner()

        async def start_and_stop() -> None:
            await runner.start()
            runner.stop()  # before any worker task runs: recovery only, no claims
            await runner.wait()

        self.loop.run_until_complete(start_and_stop())
        for job in self.model.values():
            if job.status == jobtable.Status.RUNNING:
                job.status, job.error = jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED
        self.runner, self.kind = self.new_runner()
        self.crashed = False

    def failed(self) -> list[str]:
        """The model's failed jobs not retried yet, in enqueue order.

        A retry allows as many more attempts as the job had: once retried,
        a job of one attempt gets one more, and fails for good again as the
        model expects (a second retry would give it two, and retries).
        """
        return [
            i
            for i in self.order
            if self.model[i].status == jobtable.Status.FAILED and i not in self.retries
        ]

    @precondition(lambda self: bool(self.failed()))
    @rule(data=st.data())
    def retry_failed(self, data: st.DataObject) -> None:
        """An operator retries a failed job: queued again, its result cleared, its steps kept."""
        job_id = data.draw(st.sampled_from(self.failed()))
        job = self.model[job_id]
        retried = self.store.retry(job_id)
        assert retried == jobtable.RetryResult.RETRIED, (job_id, retried)
        job.status, job.result, job.error, job.seen = jobtable.Status.QUEUED, None, None, []
        self.retries[job_id] = self.retries.get(job_id, 0) + 1

    @rule(job_id=jobs, partial=st.integers())
    def publish_after_finish(self, job_id: str, partial: int) -> None:
        """A handler's context outlives its job: publishing then is an error and changes nothing."""
        ctx = self.contexts.get(job_id)
        if ctx is None or self.model[job_id].status == jobtable.Status.RUNNING:
            return
        try:
            self.loop.run_until_complete(ctx.apublish(partial))
        except jobtable.NotRunning:
            pass
        else:
            raise AssertionError(f"publish for finished job {job_id} was accepted")

    @rule(job_id=jobs)
    def get_typed(self, job_id: str) -> None:
        job = self.kind.get(job_id)
        assert job.result == self.model[job_id].result

    @rule()
    def get_unknown(self) -> None:
        try:
            engine_of(self.store).read(lambda q: q.get_job(id="no-such-job"))
            self.runner.get("no-such-job")
        except jobtable.JobNotFound:
            return
        raise AssertionError("get of an unknown id returned a job")

    # Invariants, checked after every step.

    @invariant()
    def jobs_match_the_model(self) -> None:
        for job_id, expected in self.model.items():
            job = self.runner.get(job_id)
            expected.seen.append(job.status)
            assert job.id == job_id
            assert job.kind == "script"
            assert job.status == expected.status, (job_id, job.status, expected.status)
            assert job.result == expected.result, (job_id, job.result, expected.result)
            assert job.error == expected.error, (job_id, job.error, expected.error)
            assert (job.error is not None) == (job.status == jobtable.Status.FAILED)
            assert set(job.model_dump(mode="json")) == {"id", "kind", "status", "result", "error"}

    @invariant()
    def statuses_only_move_forward(self) -> None:
        rank = {
            jobtable.Status.QUEUED: 0,
            jobtable.Status.RUNNING: 1,
            jobtable.Status.SUCCEEDED: 2,
            jobtable.Status.FAILED: 2,
        }
        for job in self.model.values():
            for before, after in zip(job.seen, job.seen[1:], strict=False):
                assert rank[after] >= rank[before], (job.id, job.seen)
                if rank[before] == 2:
                    assert after == before, f"finished job {job.id} changed: {job.seen}"

    @invariant()
    def no_job_runs_twice(self) -> None:
        self.check_each_ran_once()
        assert set(self.runs) <= set(self.model)

    def check_steps_ran_once(self) -> None:
        """No step function ran twice for a job: a later attempt got its recorded output."""
        again = {key: count for key, count in self.step_runs.items() if count > 1}
        assert not again, f"completed steps ran again in a later attempt: {again}"

    @invariant()
    def completed_steps_never_run_again(self) -> None:
        self.check_steps_ran_once()
        for job_id in self.runs:
            recorded = self.store.inspect(job_id).steps
            completed = sorted(name for (i, name) in self.step_runs if i == job_id)
            assert [step.name for step in recorded] == completed, (job_id, recorded)

    @invariant()
    def no_exception_text_is_stored(self) -> None:
        stored = self.target.stored()
        for job_id in self.runs:
            secret = secret_of(self.model[job_id].script).encode()
            assert secret not in stored, f"the exception text of {job_id} was stored"


DRAIN_LIMIT = 30.0
"""Seconds the hot path gets to finish its queue: only a broken runner reaches it."""

# PostgreSQL examples cost a schema each (about 1.5 s), so it runs fewer.
EXAMPLES = {"sqlite": 60, "postgres": 20}
MACHINE_SETTINGS = settings(
    max_examples=100,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture
def machine(engine: str, request: pytest.FixtureRequest) -> type[LifecycleMachine]:
    """The machine class for the test's engine."""
    return on_engine(LifecycleMachine, engine, request)


# The examples run as PARTS tests of their own, each from its own random
# seed, so that xdist runs them side by side: the longest test bounds the suite.
PARTS = 2


@pytest.mark.slow
@pytest.mark.parametrize("part", range(PARTS))
def test_lifecycle_keeps_its_invariants(
    machine: type[LifecycleMachine], engine: str, part: int
) -> None:
    run_state_machine_as_test(
        machine, settings=settings(MACHINE_SETTINGS, max_examples=EXAMPLES[engine] // PARTS)
    )


def broken(machine: type[LifecycleMachine], step: str) -> type[LifecycleMachine]:
    """A machine with one step deliberately broken, defined in this test only."""

    class Broken(LifecycleMachine):
        make_target = staticmethod(machine.make_target)

        def claim_and_run(self) -> str | None:
            if step == "claim ignores enqueue order":
                # Claims the two oldest jobs and runs the newer one.
                claimed = self.loop.run_until_complete(self.runner._producers[0].claim(2))
                if not claimed:
                    return None
                job = claimed[-1]
                self.loop.run_until_complete(self.runner._executor.run(job, "default"))
                if len(claimed) > 1:
                    self.loop.run_until_complete(self.runner._executor.run(claimed[0], "default"))
                return job.id
            if step == "handler runs twice":
                ran = super().claim_and_run()
                if ran is not None:
                    self.runs[ran] += 1
                return ran
            raise AssertionError(step)

    return Broken


def broken_leak(machine: type[LifecycleMachine]) -> type[LifecycleMachine]:
    """A machine whose runner stores a handler's exception text, which jobtable must never do."""

    class Leaky(LifecycleMachine):
        make_target = staticmethod(machine.make_target)

        def expect_ran(self, job_id: str) -> None:
            # Each job that ran, on either path, leaks as it is accounted for.
            super().expect_ran(job_id)
            script = self.model[job_id].script
            if script.outcome == "error":
                leak = f"boom {secret_of(script)}"
                engine_of(self.store).write(
                    lambda q: q.insert_jobs(
                        kind="leak", jobs=[NewJob(secrets.token_hex(8), leak, now())], now=now()
                    )
                )

    return Leaky


@pytest.mark.slow
@pytest.mark.parametrize("step", ["claim ignores enqueue order", "handler runs twice"])
def test_machine_finds_a_broken_step(machine: type[LifecycleMachine], step: str) -> None:
    with pytest.raises(AssertionError):
        run_state_machine_as_test(broken(machine, step), settings=FIND_SETTINGS)


@pytest.mark.slow
def test_machine_finds_stored_exception_text(machine: type[LifecycleMachine]) -> None:
    with pytest.raises(AssertionError, match="exception text"):
        run_state_machine_as_test(broken_leak(machine), settings=FIND_SETTINGS)


# The claim statement each engine runs, and its status guard: (module,
# constant, the guard, the planted fault). The fault lets a claim take a job
# that is already running, as a claim without its guard would: the job runs
# twice. (A guard dropped whole would also reclaim failed jobs, and the
# table's CHECK on error would refuse that write before any job ran twice.)
GUARD = "WHERE ready.status = 'queued' AND ready.scheduled"
NO_GUARD = "WHERE ready.status IN ('queued', 'running') AND ready.scheduled"
CLAIM_STATEMENTS = {
    "sqlite": ("jobtable.db.sqlite.jobs", "CLAIM_NEXT_JOB"),
    "postgres": ("jobtable.db.postgres.jobs", "FINISH_AND_CLAIM_JOBS"),
}


@pytest.mark.slow
def test_runs_twice_check_catches_a_claim_without_its_status_guard(
    machine: type[LifecycleMachine], engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fault in the system, not in the machine: in this test only, the
    # engine's generated claim statement takes running jobs too, so a job
    # under way on one worker is claimed and run again on another.
    import importlib

    module_name, constant = CLAIM_STATEMENTS[engine]
    module = importlib.import_module(module_name)
    statement: str = getattr(module, constant)
    assert GUARD in statement, f"{module_name}.{constant} changed: the planted fault is stale"
    monkeypatch.setattr(module, constant, statement.replace(GUARD, NO_GUARD))
    # PostgreSQL's claims resume after the last job claimed, so a running
    # job behind that place is offered again only at a rescan: every claim
    # rescans here, for the search to reach the fault within its budget.
    monkeypatch.setattr(claim_cursor, "RESCAN_SECONDS", 0.0)
    with pytest.raises(AssertionError, match="jobs ran twice"):
        run_state_machine_as_test(machine, settings=FIND_SETTINGS)


@pytest.mark.slow
def test_completed_steps_check_catches_a_retry_that_forgets_them(
    machine: type[LifecycleMachine], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fault in the system: in this test only, a later attempt finds no
    # recorded step, so it runs every completed step again.
    import jobtable._runner.resume as resume

    @dataclasses.dataclass(frozen=True)
    class Forgets:
        job_id: str
        name: str

        def __call__(self, q: object) -> None:
            return None

    monkeypatch.setattr(resume, "ReadStep", Forgets)
    with pytest.raises(AssertionError, match="completed steps ran again"):
        run_state_machine_as_test(machine, settings=FIND_SETTINGS)
