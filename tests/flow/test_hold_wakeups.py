"""Every hold has a wake-up: a held job starts as soon as it is released, not at the next poll.

Each test holds a job back one way (behind its sequence's predecessor, behind
a limit another runner's job fills, by a pause, by a limit, behind a
dependency, by a rate window), releases it, and checks that a real runner
whose poll interval is far longer than the test starts it promptly. The
bound is a correctness bound (a wake, not a poll), not a speed measure:
``make bench``'s wake-up section measures the delay.
"""

import asyncio
import datetime
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
POLL = 30.0
"""The runners' poll interval: a released job that waited for it would fail the test."""
PROMPT = 2.0
"""Seconds within which a released job must start: far below POLL."""

STEP = jobtable.Kind("step", int, int, queue="q")


class Starts:
    """When each job's handler started and ended, by its payload (monotonic seconds)."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}
        self.ended: dict[int, float] = {}
        self.gates: dict[int, threading.Event] = {}

    def gate(self, n: int) -> threading.Event:
        """The event job n's handler waits for before it ends (set: it ends at once)."""
        return self.gates.setdefault(n, threading.Event())

    def run(self, n: int) -> int:
        self.started[n] = time.monotonic()
        if not self.gate(n).wait(60):
            raise RuntimeError(f"job {n} was never released")
        self.ended[n] = time.monotonic()
        return n


def runner_of(
    store: jobtable.Store,
    starts: Starts,
    *,
    workers: int = 1,
    flow: tuple[jobtable.Queue, ...] = (),
    name: str = "a",
) -> jobtable.Runner:
    """A runner of queue q that records starts and never polls within a test."""
    runner = jobtable.Runner(store, queues={"q": workers}, poll_interval=POLL, flow=flow, name=name)

    @runner.handler(STEP)
    def step(ctx: jobtable.JobContext[int], n: int) -> int:
        return starts.run(n)

    return runner


@pytest.fixture
async def running() -> AsyncIterator[list[jobtable.Runner]]:
    """The runners a test starts (append them), stopped after it."""
    runners: list[jobtable.Runner] = []
    yield runners
    for runner in runners:
        runner.stop()
    for runner in runners:
        await runner.wait()


async def start(runners: list[jobtable.Runner], runner: jobtable.Runner) -> None:
    runners.append(runner)
    await runner.start()


async def settle() -> None:
    """Gives the runners time to claim what they can and wait (idle) for the rest."""
    await asyncio.sleep(0.3)


async def test_the_next_job_of_a_sequence_starts_when_its_predecessor_ends(
    store: jobtable.Store, running: list[jobtable.Runner], wait_until: WaitUntil
) -> None:
    starts = Starts()
    STEP.enqueue_many(store, [1, 2], sequence_key="s")
    await start(running, runner_of(store, starts))
    await wait_until(lambda: 1 in starts.started)
    await settle()
    starts.gate(2).set()
    starts.gate(1).set()
    await wait_until(lambda: 2 in starts.started, limit=POLL / 3)
    assert starts.started[2] - starts.ended[1] < PROMPT


async def test_a_slot_another_runner_frees_is_taken_at_once(
    store: jobtable.Store, running: list[jobtable.Runner], wait_until: WaitUntil
) -> None:
    starts = Starts()
    limit = (jobtable.Queue("q", concurrency=1),)
    first = runner_of(store, starts, flow=limit)
    await start(running, first)
    STEP.enqueue(store, 1)
    await wait_until(lambda: 1 in starts.started)
    await start(running, runner_of(store, starts, flow=limit, name="b"))
    STEP.enqueue(store, 2)
    await settle()
    assert 2 not in starts.started
    # The first runner ends its job and claims nothing more: only the other can start job 2.
    first.stop()
    starts.gate(2).set()
    starts.gate(1).set()
    await wait_until(lambda: 2 in starts.started, limit=POLL / 3)
    assert starts.started[2] - starts.ended[1] < PROMPT


async def test_a_resumed_queue_starts_its_jobs_at_once(
    store: jobtable.Store, running: list[jobtable.Runner], wait_until: WaitUntil
) -> None:
    starts = Starts()
    starts.gate(1).set()
    store.pause("q")
    STEP.enqueue(store, 1)
    await start(running, runner_of(store, starts))
    await settle()
    assert 1 not in starts.started
    resumed = time.monotonic()
    store.resume("q")
    await wait_until(lambda: 1 in starts.started, limit=POLL / 3)
    assert starts.started[1] - resumed < PROMPT


async def test_a_raised_limit_starts_the_jobs_it_lets_through_at_once(
    store: jobtable.Store, running: list[jobtable.Runner], wait_until: WaitUntil
) -> None:
    starts = Starts()
    store.set_limits("q", concurrency=1)
    STEP.enqueue_many(store, [1, 2])
    await start(running, runner_of(store, starts, workers=2))
    await wait_until(lambda: 1 in starts.started)
    await settle()
    assert 2 not in starts.started
    raised = time.monotonic()
    store.set_limits("q", concurrency=2)
    await wait_until(lambda: 2 in starts.started, limit=POLL / 3)
    assert starts.started[2] - raised < PROMPT
    starts.gate(1).set()
    starts.gate(2).set()


async def test_a_dependent_starts_when_its_dependency_settles(
    store: jobtable.Store, running: list[jobtable.Runner], wait_until: WaitUntil
) -> None:
    starts = Starts()
    wf = jobtable.Workflow("w")
    first = wf.add(STEP, 1)
    wf.add(STEP, 2, after=[first])
    wf.enqueue(store)
    await start(running, runner_of(store, starts, workers=2))
    await wait_until(lambda: 1 in starts.started)
    await settle()
    starts.gate(2).set()
    starts.gate(1).set()
    await wait_until(lambda: 2 in starts.started, limit=POLL / 3)
    assert starts.started[2] - starts.ended[1] < PROMPT


async def test_a_rate_limited_job_starts_when_the_window_opens(
    store: jobtable.Store, running: list[jobtable.Runner], wait_until: WaitUntil
) -> None:
    starts = Starts()
    for n in (1, 2, 3):
        starts.gate(n).set()
    per = 0.5
    rate = jobtable.Rate(1, per=datetime.timedelta(seconds=per))
    STEP.enqueue_many(store, [1, 2, 3])
    limit = (jobtable.Queue("q", rate=rate),)
    await start(running, runner_of(store, starts, workers=2, flow=limit))
    await wait_until(lambda: 3 in starts.started, limit=POLL / 3)
    assert starts.started[2] - starts.started[1] < per + PROMPT
    assert starts.started[3] - starts.started[2] < per + PROMPT
