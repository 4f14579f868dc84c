"""Job options as a Hypothesis state machine: retries, schedules, cancels, timeouts, interrupts.

The machine enqueues jobs with a priority, a delay and a number of attempts,
each scripting what its handler does per attempt (succeed, raise an error,
raise Failure, ask for a Retry, hang past its timeout, or get cancelled while
it runs). It moves the store's clock, runs the next ready job through the
runner's own claim-and-run path (``Runner.run_next``), cancels queued jobs,
crashes a runner under a claimed job and restarts it, and replays the late
writes of attempts that ended. A model predicts every step; the invariants:

- attempts never exceed max_attempts;
- a job never runs before its run_at;
- among ready jobs, the lowest priority runs first, then the oldest;
- a cancelled job's handler never starts after the cancel committed;
- no attempt's outcome lands after a later attempt began (late writes are
  fenced off).

``test_machine_finds_*`` plant one fault each, defined here only, and check
that the machine fails with the invariant that guards it. Every test runs
on both engines.
"""

import asyncio
import dataclasses
import datetime
import pathlib
import re
import secrets
import tempfile
from collections.abc import Callable
from typing import Any, Literal

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import FlakyFailure
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pydantic import BaseModel

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.postgres import claim_cursor
from jobtable._operations import CancelJob
from jobtable._runner.operations import Finish, FinishAndClaim, Publish
from jobtable._values import timestamp

Step = Literal["succeed", "error", "failure", "retry", "hang", "cancel"]
T0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
BACKOFF = datetime.timedelta(seconds=10)
SNOOZE = datetime.timedelta(seconds=5)
TIMEOUT = 0.05
# A job that also has a cancel step gets a timeout its cancel lands well within,
# even on a loaded machine: the timeout runs on the real clock, through the
# cancel's own write and the watch's read, and the first to end the attempt wins.
TIMEOUT_WITH_CANCEL = 3.0


class Script(BaseModel):
    """What the handler does at each attempt; past the list's end it succeeds."""

    steps: list[Step]


class Clock:
    """The store's clock: it moves only when the machine moves it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime.datetime:
        return self.now


@dataclasses.dataclass
class ModelJob:
    """What the model expects of one job."""

    id: str
    seq: int
    priority: int
    run_at: datetime.datetime
    max_attempts: int
    script: Script
    status: jobtable.Status = jobtable.Status.QUEUED
    attempt: int = 0
    cancelled_at_step: int | None = None


@dataclasses.dataclass
class Started:
    """A handler start the machine saw: which attempt, at what time and step, and its run_at."""

    job_id: str
    attempt: int
    at: datetime.datetime
    step: int
    run_at: datetime.datetime


def sqlite_target() -> tuple[str, Callable[[], None]]:
    folder = tempfile.TemporaryDirectory(prefix="jobtable-options-")
    return str(pathlib.Path(folder.name) / "jobs.db"), folder.cleanup


def postgres_target(server: str) -> tuple[str, Callable[[], None]]:
    import psycopg
    from psycopg import sql

    schema = f"jobtable_options_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    separator = "&" if "?" in server else "?"

    def drop() -> None:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))

    return f"{server}{separator}options=-csearch_path%3D{schema}", drop


job = jobtable.Kind("scripted", Script, int, retry=lambda attempt: BACKOFF)


class OptionsMachine(RuleBasedStateMachine):
    """Drives one store and runner; see the module docstring."""

    make_target: Callable[[], tuple[str, Callable[[], None]]] = staticmethod(sqlite_target)
    jobs = Bundle("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        target, self.drop = self.make_target()
        self.clock = Clock()
        self.store = jobtable.Store.open(target, clock=self.clock)
        self.model: dict[str, ModelJob] = {}
        self.started: list[Started] = []
        self.step = 0
        self.violations: list[str] = []
        self.runner = self.new_runner()

    def new_runner(self) -> jobtable.Runner:
        runner = jobtable.Runner(self.store, workers=1, name="machine")

        @runner.handler(job)
        async def handle(ctx: jobtable.JobContext[int], script: Script) -> int:
            m = self.model[ctx.id]
            self.started.append(Started(ctx.id, ctx.attempt, self.clock(), self.step, m.run_at))
            # The earlier attempts' handlers write late, while this one runs.
            # (An assertion here would only fail the attempt: the executor
            # turns it into the internal error, so violations are noted.)
            for attempt in range(1, ctx.attempt):
                if await self.late_write(ctx.id, attempt):
                    self.violations.append(f"a late write of attempt {attempt} of {ctx.id} landed")
            step = script.steps[ctx.attempt - 1] if ctx.attempt <= len(script.steps) else "succeed"
            if step == "error":
                raise RuntimeError("token=hunter2")
            if step == "failure":
                raise jobtable.Failure("no")
            if step == "retry":
                raise jobtable.Retry(after=SNOOZE)
            if step == "hang":
                await asyncio.sleep(3600)
            if step == "cancel":
                # A cancel arrives while the job runs; the runner's watch sees it.
                requested = self.store.cancel(ctx.id) is jobtable.CancelResult.REQUESTED
                if self.check_model and not requested:
                    self.violations.append(f"cancel of running {ctx.id} was not requested")
                if requested:
                    await runner._cancel_watch.check()
                    # Bounded: a cancel that never lands lets the job succeed,
                    # which the model then sees.
                    await asyncio.sleep(30)
            return ctx.attempt

        return runner

    def teardown(self) -> None:
        self.store.close()
        self.loop.close()
        self.drop()

    # The model's prediction of the next ready job.

    def ready(self) -> list[ModelJob]:
        return sorted(
            (
                m
                for m in self.model.values()
                if m.status is jobtable.Status.QUEUED and m.run_at <= self.clock.now
            ),
            key=lambda m: (m.priority, m.seq),
        )

    def attempt_ended(self, m: ModelJob, step: Step | Literal["interrupted"]) -> None:
        """Moves the model of m past an attempt that ended with step."""
        now = self.clock.now
        if step == "succeed":
            m.status = jobtable.Status.SUCCEEDED
        elif step == "failure":
            m.status = jobtable.Status.FAILED
        elif step == "retry":
            m.max_attempts += 1
            m.run_at = now + SNOOZE
        elif step == "cancel":
            m.status = jobtable.Status.CANCELLED
            m.cancelled_at_step = self.step
        elif m.attempt < m.max_attempts:
            m.run_at = now + (datetime.timedelta(0) if step == "interrupted" else BACKOFF)
        else:
            m.status = jobtable.Status.FAILED

    # Rules.

    @rule(
        target=jobs,
        priority=st.integers(-2, 2),
        delay=st.sampled_from([0, 0, 3, 30]),
        max_attempts=st.integers(1, 3),
        steps=st.lists(st.sampled_from(["succeed", "error", "failure", "retry", "hang", "cancel"])),
    )
    def enqueue(self, priority: int, delay: int, max_attempts: int, steps: list[Step]) -> str:
        options: dict[str, Any] = {"priority": priority, "max_attempts": max_attempts}
        if delay:
            options["delay"] = datetime.timedelta(seconds=delay)
        if "hang" in steps:
            options["timeout"] = TIMEOUT_WITH_CANCEL if "cancel" in steps[:4] else TIMEOUT
        job_id = job.enqueue(self.store, Script(steps=steps[:4]), **options)
        record = self.store.inspect(job_id)
        self.model[job_id] = ModelJob(
            job_id, record.seq, priority, record.run_at, max_attempts, Script(steps=steps[:4])
        )
        return job_id

    @rule(seconds=st.sampled_from([1, 5, 10, 30]))
    def advance_clock(self, seconds: int) -> None:
        self.clock.now += datetime.timedelta(seconds=seconds)

    @rule()
    def run_next(self) -> None:
        self.step += 1
        expected = self.ready()
        ran = self.loop.run_until_complete(self.runner.run_next())
        self.check_last_start(ran)
        assert ran == (expected[0].id if expected else None), (
            f"claimed {ran}, but priority then enqueue order says {[m.id for m in expected[:1]]}"
        )
        if ran is None:
            return
        m = self.model[ran]
        m.attempt += 1
        script = m.script.steps
        step = script[m.attempt - 1] if m.attempt <= len(script) else "succeed"
        if step != "hang" and self.timed_out(ran, m.attempt):
            # The handler of a job with a timeout ran past it (its late
            # writes commit first, slowly on a loaded machine): the attempt
            # is timed out, as it must be, and the model follows.
            step = "hang"
        self.attempt_ended(m, "error" if step == "hang" else step)

    def timed_out(self, job_id: str, attempt: int) -> bool:
        """Whether the job's record says its attempt ended by its timeout."""
        errors = self.store.inspect(job_id).errors
        return any(e.attempt == attempt and e.error == jobtable.MESSAGE_TIMED_OUT for e in errors)

    @rule(seconds=st.sampled_from([5, 10, 30]))
    def later_run_next(self, seconds: int) -> None:
        """Time passes, then the next ready job runs: the common case, so a rule of its own."""
        self.advance_clock(seconds)
        self.run_next()

    @rule(job_id=jobs)
    def cancel(self, job_id: str) -> None:
        self.step += 1
        m = self.model[job_id]
        result = self.store.cancel(job_id)
        if m.status is jobtable.Status.QUEUED:
            assert result is jobtable.CancelResult.CANCELLED
            m.status = jobtable.Status.CANCELLED
            m.cancelled_at_step = self.step
        elif self.check_model:
            assert result is jobtable.CancelResult.FINISHED

    @precondition(lambda self: bool(self.ready()))
    @rule()
    def crash_and_restart(self) -> None:
        """A runner claims the next job and dies; its successor of the same name starts."""
        self.step += 1
        [m] = self.ready()[:1]
        crashed = self.new_runner()
        claimed = [row.id for row in self.loop.run_until_complete(crashed._producers[0].claim(1))]
        for job_id in claimed:
            record = self.store.inspect(job_id)
            assert record.attempt <= record.max_attempts, (
                f"attempts exceed max_attempts: {job_id} at {record.attempt}"
            )
            assert self.model[job_id].run_at <= self.clock.now, f"ran before its run_at: {job_id}"
            # Claimed, its handler would start: the crash only cuts it short.
            assert self.model[job_id].cancelled_at_step is None, (
                f"a cancelled job's handler started: {job_id} was claimed after its cancel"
            )
        assert claimed == [m.id], f"claimed {claimed}, but priority then enqueue order says {m.id}"
        m.attempt += 1
        self.runner = self.new_runner()
        self.loop.run_until_complete(self.runner._maintenance.begin())
        self.attempt_ended(m, "interrupted")

    async def late_write(self, job_id: str, attempt: int) -> bool:
        """Publishes and finishes job_id as its attempt would; returns whether either landed."""
        engine = self.store.engine
        try:
            await engine.awrite(Publish(_Claimed(job_id, attempt), "-1", self.store.now()))
            published = True
        except jobtable.NotRunning:
            published = False
        claimed = _Claimed(job_id, attempt)
        finished, _ = await engine.awrite(
            FinishAndClaim([Finish.succeeded(claimed, "-1")], "machine", "", 0, self.store.now())
        )
        return published or job_id in finished

    def check_last_start(self, ran: str | None) -> None:
        """The invariants of the claim that started ran, checked before the model's order."""
        if ran is None:
            return
        record = self.store.inspect(ran)
        # The record is read after the attempt's outcome: a Retry it raised
        # grew max_attempts by one, which the attempt did not have at its start.
        script = self.model[ran].script.steps
        snoozed = record.attempt <= len(script) and script[record.attempt - 1] == "retry"
        limit = record.max_attempts - snoozed
        assert record.attempt <= limit, (
            f"attempts exceed max_attempts: {ran} at {record.attempt} of {limit}"
        )
        last = self.started[-1] if self.started else None
        if last is None or last.job_id != ran:
            return
        assert last.at >= last.run_at, f"ran before its run_at: {ran}"
        m = self.model[ran]
        assert m.cancelled_at_step is None, f"a cancelled job's handler started: {ran}"

    # Invariants.

    @invariant()
    def no_late_write_landed(self) -> None:
        assert not self.violations, self.violations[0]

    @invariant()
    def attempts_never_exceed_max_attempts(self) -> None:
        for record in self.store.list_jobs(limit=1000):
            assert record.attempt <= record.max_attempts, (
                f"attempts exceed max_attempts: {record.id} at {record.attempt} "
                f"of {record.max_attempts}"
            )

    @invariant()
    def no_job_ran_before_its_run_at(self) -> None:
        for start in self.started:
            assert start.at >= start.run_at, f"ran before its run_at: {start.job_id}"

    @invariant()
    def a_cancelled_handler_never_starts(self) -> None:
        for start in self.started:
            m = self.model[start.job_id]
            if m.cancelled_at_step is not None:
                assert start.step <= m.cancelled_at_step, (
                    f"a cancelled job's handler started: {m.id}"
                )

    check_model = True
    """Whether the model's statuses are checked; a planted fault turns it off to show that
    the invariant it targets catches the fault on its own."""

    @invariant()
    def the_model_agrees(self) -> None:
        if not self.check_model:
            return
        for m in self.model.values():
            record = self.store.inspect(m.id)
            assert (record.status, record.attempt) == (m.status, m.attempt), m
            if m.status is jobtable.Status.QUEUED:
                assert record.run_at == m.run_at


@dataclasses.dataclass(frozen=True)
class _Claimed:
    """A claim of attempt of job_id, as a late write names it."""

    id: str
    attempt: int
    seq: int = 0
    kind: str = job.name
    payload: str = "{}"
    max_attempts: int = 1
    timeout: float | None = None
    priority: int = 0
    traceparent: str | None = None
    partition_key: str | None = None
    workflow_id: str | None = None


EXAMPLES = {"sqlite": 60, "postgres": 15}
MACHINE_SETTINGS = settings(
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FIND_SETTINGS = settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


@pytest.fixture
def machine(engine: str, request: pytest.FixtureRequest) -> type[OptionsMachine]:
    """The machine class for the test's engine."""
    if engine == "sqlite":
        return OptionsMachine
    server: str = request.getfixturevalue("pg_server")

    class PostgresMachine(OptionsMachine):
        make_target = staticmethod(lambda: postgres_target(server))

    return PostgresMachine


@pytest.mark.slow
def test_the_options_keep_their_invariants(machine: type[OptionsMachine], engine: str) -> None:
    run_state_machine_as_test(
        machine, settings=settings(MACHINE_SETTINGS, max_examples=EXAMPLES[engine])
    )


def planted(machine: type[OptionsMachine], fault: str) -> type[OptionsMachine]:
    """The machine with one fault planted, defined in this test only."""

    class Planted(OptionsMachine):
        make_target = staticmethod(machine.make_target)
        check_model = False

        def new_runner(self) -> jobtable.Runner:
            runner = super().new_runner()
            if fault == "retries past max_attempts":
                clock = self.clock

                def always_retry(job: Any, error: str, retry: Any, **logged: Any) -> Finish:
                    return Finish.failed(job, error, timestamp(clock() + BACKOFF))

                runner._executor._failed = always_retry  # type: ignore[method-assign]
            for producer in runner._producers:
                if fault == "stages jobs early":
                    stage = producer.stage

                    async def early(now: datetime.datetime, stage: Any = stage) -> None:
                        await stage(now + datetime.timedelta(days=365))

                    producer.stage = early  # type: ignore[method-assign]
                if fault == "claims out of order":
                    claim = producer.claim

                    async def newest(max_jobs: int, outcomes: Any = (), claim: Any = claim) -> Any:
                        return list(await claim(max_jobs + 1, outcomes))[-1:]

                    producer.claim = newest  # type: ignore[method-assign]
            return runner

        async def late_write(self, job_id: str, attempt: int) -> bool:
            if fault == "late writes unfenced":
                attempt = self.store.inspect(job_id).attempt
            return await super().late_write(job_id, attempt)

    return Planted


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "caught"),
    [
        ("retries past max_attempts", "attempts exceed max_attempts"),
        ("stages jobs early", "ran before its run_at"),
        ("claims out of order", "priority then enqueue order"),
        # An unfenced late retry also requeues a job past its attempts: either
        # invariant may be the first to see the fault, by the search's luck.
        ("late writes unfenced", "a late write of attempt|attempts exceed max_attempts"),
        ("cancel leaves the job queued", "a cancelled job's handler started"),
    ],
)
def test_machine_finds_a_planted_fault(
    machine: type[OptionsMachine], fault: str, caught: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if fault == "cancel leaves the job queued":

        def cancel_nothing(self: CancelJob, q: Queries) -> jobtable.CancelResult:
            return jobtable.CancelResult.CANCELLED

        monkeypatch.setattr(CancelJob, "__call__", cancel_nothing)
    # PostgreSQL's claims resume after the last job claimed, so a job a
    # fault leaves behind that place is offered again only at a rescan:
    # every claim rescans here, for the search to reach it within its budget.
    monkeypatch.setattr(claim_cursor, "RESCAN_SECONDS", 0.0)
    # Timeouts are real time, so on a loaded machine the replay of the failing
    # run may not fail again: Hypothesis then raises FlakyFailure holding the
    # failure it found, which proves the fault was seen all the same.
    with pytest.raises((AssertionError, FlakyFailure)) as found:
        run_state_machine_as_test(planted(machine, fault), settings=FIND_SETTINGS)
    failures = found.value.exceptions if isinstance(found.value, FlakyFailure) else [found.value]
    assert any(re.search(caught, str(failure)) for failure in failures), failures
