"""Flow control as a Hypothesis state machine, through each engine's real claim.

The machine enqueues jobs into two queues with random partition and
sequence keys, claims with the runner's own claim operation (``FlowClaim``),
ends running jobs with every outcome (succeeded, failed, cancelled, or a
retry, which queues the job again in its place), pauses and resumes queues,
sets and clears an operator's limits, and moves the rate window on by
ageing the recorded starts (the claim counts them on the database's own
clock, so the test moves the starts back instead of the clock forward).
A model keeps what it has seen; after each claim it checks:

- running <= concurrency, for the queue;
- running <= partition limit, for each key;
- starts within the rate period <= the rate (per key when per key);
- at most one job of a sequence runs, and no job starts while an earlier
  job of its sequence waits, runs, or ended failed or cancelled and blocks;
- nothing starts in a paused queue;
- a claim that took fewer jobs than it asked for left none it could take.

A limit lowered below what already runs holds back new starts only, so each
bound is checked when a claim starts a job, and held as an invariant after
every step. ``test_machine_finds_*`` plant a fault in the generated claim
statements (a limit's clause made empty) and check that the machine fails
with that invariant's message. Every example of one test shares a store, in
queues and keys of its own: a PostgreSQL schema per example would cost more
than the example.
"""

import dataclasses
import datetime
import importlib
import re
import secrets
import sqlite3
from collections.abc import Callable

import hypothesis.strategies as st
import pytest
from finding import FIND_SETTINGS
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from hypothesis.stateful import run_state_machine_as_test as run_machine

import jobtable
from jobtable._engines.rows import Outcome
from jobtable._runner.run_operations import Finish, FlowClaim
from jobtable._values import timestamp

PERIOD = datetime.timedelta(hours=1)
RUNNER = "machine"
KEYS = [None, "a", "b"]
OUTCOMES = ["succeeded", "failed", "cancelled", "retry"]
QUEUES = st.sampled_from([0, 0, 0, 1])
"""The queue a step acts on: mostly the first, so that its jobs meet its limits."""


@dataclasses.dataclass
class Job:
    """What the model knows of one job."""

    id: str
    queue: str
    partition: str | None
    sequence: str | None
    blocks: bool
    status: str = "queued"
    attempt: int = 0


@dataclasses.dataclass
class Limits:
    """An operator's limits of a queue, as the model holds them; the rate's period is PERIOD."""

    concurrency: int | None = None
    partition: int | None = None
    rate: int | None = None
    per_key: bool = False


limits = st.one_of(
    # One limit alone most often, so that each is met without the others in the way.
    st.builds(Limits, concurrency=st.integers(1, 3)),
    st.builds(Limits, partition=st.integers(1, 2)),
    st.builds(Limits, rate=st.integers(1, 4)),
    st.builds(Limits, partition=st.integers(1, 2), rate=st.integers(1, 3), per_key=st.just(True)),
    st.builds(
        Limits,
        concurrency=st.none() | st.integers(1, 3),
        partition=st.none() | st.integers(1, 2),
        rate=st.none() | st.integers(1, 4),
        per_key=st.booleans(),
    ).filter(lambda chosen: (chosen.concurrency, chosen.partition, chosen.rate) != (None,) * 3),
)


class FlowMachine(RuleBasedStateMachine):
    """Drives the real claim and a model side by side; the test gives the store and its ageing."""

    store: jobtable.Store
    age_starts: Callable[[float], None]
    """Moves every recorded start back by that many seconds."""

    def __init__(self) -> None:
        super().__init__()
        prefix = secrets.token_hex(4)
        self.queues = [f"{prefix}-q0", f"{prefix}-q1"]
        self.prefix = prefix
        self.kinds = {
            (queue, blocks): jobtable.Kind(
                "k",
                int,
                int,
                queue=queue,
                sequence=jobtable.Sequence(on_failure="block" if blocks else "continue"),
            )
            for queue in self.queues
            for blocks in (True, False)
        }
        # A Sequence without by is kind-wide: jobs without a key come from a kind without one.
        self.plain = {queue: jobtable.Kind("k", int, int, queue=queue) for queue in self.queues}
        self.jobs: dict[str, Job] = {}
        self.order: list[str] = []
        self.paused: set[str] = set()
        self.limits: dict[str, Limits] = {}
        self.starts: list[tuple[str, str | None, float]] = []  # queue, key, time in periods
        self.clock = 0.0  # in periods
        self.broken: list[str] = []

    # Steps.

    @initialize(chosen=limits)
    def first_limits(self, chosen: Limits) -> None:
        self.set_limits(0, chosen)

    @rule(
        queue=QUEUES,
        partition=st.sampled_from(KEYS),
        sequence=st.sampled_from([None, None, "s1", "s2"]),
        blocks=st.booleans(),
        count=st.integers(1, 4),
    )
    def enqueue(
        self, queue: int, partition: str | None, sequence: str | None, blocks: bool, count: int
    ) -> None:
        name = self.queues[queue]
        skey = None if sequence is None else f"{self.prefix}-{sequence}"
        kind = self.plain[name] if skey is None else self.kinds[name, blocks]
        ids = kind.enqueue_many(
            self.store, list(range(count)), partition_key=partition, sequence_key=skey
        )
        for job_id in ids:
            self.jobs[job_id] = Job(job_id, name, partition, skey, blocks or skey is None)
            self.order.append(job_id)

    @rule(queue=QUEUES, max_jobs=st.integers(1, 4))
    def claim(self, queue: int, max_jobs: int) -> None:
        name = self.queues[queue]
        stamp = timestamp(self.store.clock())
        op = FlowClaim((), RUNNER, name, max_jobs, stamp)
        _, rows, _ = self.store.engine.write(op)
        assert len(rows) <= max_jobs, "a claim took more jobs than it asked for"
        for row in sorted(rows, key=lambda row: row.seq):
            self.start(self.jobs[row.id], row.attempt)
        if len(rows) < max_jobs:
            left = [j.id for j in self.jobs.values() if j.queue == name and self.could_start(j)]
            assert not left, f"a claim that came back short left jobs it could take: {left}"

    @rule(queue=QUEUES, max_jobs=st.integers(1, 4))
    def claim_again(self, queue: int, max_jobs: int) -> None:
        # A second rule for the claim, so that claims are most of the steps.
        self.claim(queue, max_jobs)

    @rule(data=st.data(), outcome=st.sampled_from(OUTCOMES))
    def finish(self, data: st.DataObject, outcome: str) -> None:
        running = [j for j in self.jobs.values() if j.status == "running"]
        if not running:
            return
        job = data.draw(st.sampled_from(running))
        stamp = timestamp(self.store.clock())
        state = "queued" if outcome == "retry" else outcome
        ending = Outcome(
            job.id,
            job.attempt,
            state,
            "1" if state == "succeeded" else None,
            "it failed" if state == "failed" else None,
            stamp if state == "queued" else None,
        )
        op = FlowClaim([Finish(ending, "k")], RUNNER, "none", 0, stamp)
        finished, _, _ = self.store.engine.write(op)
        assert finished == [job.id], f"{job.id} did not end as {outcome}"
        job.status = state

    @rule(queue=QUEUES, paused=st.sampled_from([True, False, False]))
    def pause(self, queue: int, paused: bool) -> None:
        name = self.queues[queue]
        if paused:
            self.store.pause(name)
            self.paused.add(name)
        else:
            self.store.resume(name)
            self.paused.discard(name)

    @rule(queue=QUEUES, chosen=limits)
    def set_limits(self, queue: int, chosen: Limits) -> None:
        name = self.queues[queue]
        rate = None
        if chosen.rate is not None:
            rate = jobtable.Rate(chosen.rate, per=PERIOD, per_key=chosen.per_key)
        self.store.set_limits(
            name, concurrency=chosen.concurrency, partition_limit=chosen.partition, rate=rate
        )
        self.limits[name] = chosen

    @precondition(lambda self: self.limits)
    @rule(data=st.data())
    def clear_limits(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.limits)))
        self.store.clear_limits(name)
        del self.limits[name]

    @rule(periods=st.sampled_from([0.5, 1.0]))
    def advance(self, periods: float) -> None:
        self.age_starts(periods * PERIOD.total_seconds())
        self.clock += periods

    # The model.

    def start(self, job: Job, attempt: int) -> None:
        """Notes job started by a claim, checking the claim was allowed to start it."""
        assert job.status == "queued", f"{job.id} was claimed while {job.status}"
        assert job.queue not in self.paused, f"{job.id} started in a paused queue"
        ahead = self.ahead_in_sequence(job)
        assert ahead is None, f"{job.id} started before {ahead} of its sequence"
        job.status, job.attempt = "running", attempt
        if self.limits.get(job.queue, Limits()).rate is not None:
            # Starts count towards a rate from the time the queue has one.
            self.starts.append((job.queue, job.partition, self.clock))
        self.broken += self.over_limits(job)
        assert not self.broken, "; ".join(self.broken)

    def ahead_in_sequence(self, job: Job) -> str | None:
        """The first earlier job of job's sequence that holds it back, or None."""
        if job.sequence is None:
            return None
        for other_id in self.order:
            if other_id == job.id:
                return None
            other = self.jobs[other_id]
            if other.sequence == job.sequence and (
                other.status in ("queued", "running")
                or (other.status in ("failed", "cancelled") and other.blocks)
            ):
                return other_id
        return None

    def running(self, queue: str, key: object = ...) -> int:
        return sum(
            1
            for j in self.jobs.values()
            if j.status == "running" and j.queue == queue and key in (..., j.partition)
        )

    def recent(self, queue: str, key: object = ...) -> int:
        """Starts of queue (of key) within the rate's period before now."""
        return sum(
            1
            for at_queue, at_key, at in self.starts
            if at_queue == queue and key in (..., at_key) and at > self.clock - 1
        )

    def over_limits(self, job: Job) -> list[str]:
        """Each limit of job's queue that its start took past, as the invariant's message."""
        chosen = self.limits.get(job.queue, Limits())
        over = []
        if chosen.concurrency is not None and self.running(job.queue) > chosen.concurrency:
            over.append(f"concurrency: {self.running(job.queue)} running in {job.queue}")
        in_key = self.running(job.queue, job.partition)
        if chosen.partition is not None and in_key > chosen.partition:
            over.append(f"partition: {in_key} running of key {job.partition!r}")
        starts = self.recent(job.queue, job.partition if chosen.per_key else ...)
        if chosen.rate is not None and starts > chosen.rate:
            over.append(f"rate: {starts} starts in one period")
        return over

    def could_start(self, job: Job) -> bool:
        """Whether the model sees room for the queued job job to start now."""
        chosen = self.limits.get(job.queue, Limits())
        key = job.partition if chosen.per_key else ...
        return (
            job.status == "queued"
            and job.queue not in self.paused
            and self.ahead_in_sequence(job) is None
            and (chosen.concurrency is None or self.running(job.queue) < chosen.concurrency)
            and (
                chosen.partition is None
                or self.running(job.queue, job.partition) < chosen.partition
            )
            and (chosen.rate is None or self.recent(job.queue, key) < chosen.rate)
        )

    # Invariants.

    @invariant()
    def one_running_per_sequence(self) -> None:
        running = [j.sequence for j in self.jobs.values() if j.status == "running" and j.sequence]
        assert len(running) == len(set(running)), f"sequence: two running of {running}"

    @invariant()
    def nothing_runs_past_its_sequence(self) -> None:
        for job in self.jobs.values():
            if job.status == "running":
                ahead = self.ahead_in_sequence(job)
                assert ahead is None, f"sequence: {job.id} runs while {ahead} holds it back"

    @invariant()
    def no_start_went_past_a_limit(self) -> None:
        assert not self.broken, "; ".join(self.broken)


# How each engine's recorded starts are moved back in time.


def sqlite_ageing(path: str) -> Callable[[float], None]:
    def age(seconds: float) -> None:
        with sqlite3.connect(path, timeout=30) as conn:
            conn.execute("UPDATE queue_starts SET started_at = started_at - ?", (seconds,))
        conn.close()

    return age


def postgres_ageing(url: str) -> Callable[[float], None]:
    import psycopg

    def age(seconds: float) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "UPDATE queue_starts SET started_at = started_at - make_interval(secs => %s)",
                (seconds,),
            )

    return age


@pytest.fixture
def machine(engine: str, store: jobtable.Store, store_target: str) -> type[FlowMachine]:
    """The machine on the test's store."""
    ageing = sqlite_ageing(store_target) if engine == "sqlite" else postgres_ageing(store_target)

    class OnStore(FlowMachine):
        pass

    OnStore.store = store
    OnStore.age_starts = staticmethod(ageing)
    return OnStore


MACHINE_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
EXAMPLES = {"sqlite": 100, "postgres": 40}


@pytest.mark.slow
def test_flow_control_keeps_its_invariants(machine: type[FlowMachine], engine: str) -> None:
    run_machine(machine, settings=settings(MACHINE_SETTINGS, max_examples=EXAMPLES[engine]))


# The planted faults: in the generated statements of the engine's claims,
# each limit's clause made to count nothing (its check then always passes),
# and the invariant that must catch it. A pattern that matches no statement
# means the SQL changed and the fault is stale: the test says so.
FAULTS = {
    "concurrency": (
        # The queue's running count: the busy subquery that ends at the queue.
        [
            (r"(WHERE busy\.status = 'running' AND busy\.queue = \S+)(\s*\))", r"\1 AND 1 = 0\2"),
            (r"\(SELECT count\(\*\) FROM busy\)", "0"),
        ],
        "concurrency: ",
    ),
    "partition": (
        [(r"(busy\.partition_key IS (?:NOT DISTINCT FROM )?\w+\.partition_key)", r"\1 AND 1 = 0")],
        "partition: ",
    ),
    "rate": ([(r"(start\.started_at\s*>)", r"1 = 0 AND \1")], "rate: "),
    "sequence": ([(r"(prior\.seq < \w+\.seq)", r"\1 AND 1 = 0")], "sequence|before"),
    "pause": ([(r"SELECT paused,", "SELECT 1 = 0 AS paused,")], "paused queue"),
}


FIND = settings(FIND_SETTINGS, max_examples=500, stateful_step_count=50)
"""Room to find each fault: most take a few dozen examples, the search stops at the first."""


def plant(engine: str, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrites the engine's generated statements with fault, for this test only."""
    patterns, _ = FAULTS[fault]
    hits = dict.fromkeys(range(len(patterns)), 0)
    for name in ("flow", "jobs"):
        module = importlib.import_module(f"jobtable.db.{engine}.{name}")
        for constant, statement in vars(module).items():
            if not (constant.isupper() and isinstance(statement, str)):
                continue
            changed = statement
            for index, (pattern, replacement) in enumerate(patterns):
                changed, count = re.subn(pattern, replacement, changed)
                hits[index] += count
            if changed != statement:
                monkeypatch.setattr(module, constant, changed)
    assert any(hits.values()), f"the {fault} fault matches no statement: it is stale"


@pytest.fixture
def planted(engine: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fault of the test's parameter, planted before its store opens."""
    fault: str = request.param
    plant(engine, fault, monkeypatch)
    return fault


@pytest.mark.slow
@pytest.mark.parametrize("planted", list(FAULTS), indirect=True)
def test_machine_finds_a_planted_fault(planted: str, machine: type[FlowMachine]) -> None:
    _, message = FAULTS[planted]
    with pytest.raises(AssertionError, match=message):
        run_machine(machine, settings=FIND)
