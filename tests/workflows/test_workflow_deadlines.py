"""A workflow's deadline: the runners' maintenance cancels its unfinished jobs once it passed."""

import asyncio
import datetime
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable
from jobtable.testing import FrozenClock, drain

Status = jobtable.Status

quick = jobtable.Kind("quick", str, str)
parked = jobtable.Kind("parked", str, str, queue="parked")
outer = jobtable.Kind("outer", str, str)
LEASE = 0.6
WaitUntil = Callable[..., Awaitable[None]]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def store(store_target: str, clock: FrozenClock) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target, clock=clock) as opened:
        yield opened


def quick_runner(store: jobtable.Store) -> jobtable.Runner:
    """A runner of the default queue only: the parked jobs wait for the deadline."""
    runner = jobtable.Runner(store, workers=1, lease=LEASE)

    @runner.handler(quick)
    def do_quick(ctx: jobtable.JobContext[str], text: str) -> str:
        return text.upper()

    return runner


def status(store: jobtable.Store, job_id: str) -> Status:
    return store.inspect(job_id).status


async def test_a_passed_deadline_cancels_the_unfinished_jobs_with_the_reason(
    store: jobtable.Store, clock: FrozenClock, wait_until: WaitUntil
) -> None:
    # The parked queue is a limited one: its jobs wait in flow control too.
    store.set_limits("parked", concurrency=1)
    wf = jobtable.Workflow("report", deadline=datetime.timedelta(minutes=5))
    first = wf.add(quick, "a")
    waiting = wf.add(parked, "b", after=[first])
    queued = wf.add(parked, "c")
    wf.enqueue(store)
    later = jobtable.Workflow("later", deadline=clock() + datetime.timedelta(hours=1))
    untouched = later.add(parked, "d")
    later.enqueue(store)
    await drain(quick_runner(store))
    assert status(store, waiting.id) == Status.QUEUED

    clock.advance(minutes=10)
    runner = quick_runner(store)
    await runner.start()
    try:
        await wait_until(lambda: status(store, waiting.id) == Status.CANCELLED)
        await wait_until(lambda: status(store, queued.id) == Status.CANCELLED)
    finally:
        runner.stop()
        await runner.wait()
    assert status(store, first.id) == Status.SUCCEEDED
    assert store.inspect(waiting.id).cancelled_because == "workflow deadline passed"
    assert store.inspect(first.id).cancelled_because is None
    assert status(store, untouched.id) == Status.QUEUED


async def test_a_retry_after_the_deadline_runs_the_job(
    store: jobtable.Store, clock: FrozenClock, wait_until: WaitUntil
) -> None:
    wf = jobtable.Workflow("report", deadline=clock() + datetime.timedelta(minutes=5))
    job = wf.add(parked, "b")
    wf.enqueue(store)
    clock.advance(minutes=10)
    runner = quick_runner(store)
    await runner.start()
    try:
        await wait_until(lambda: status(store, job.id) == Status.CANCELLED)
        # The deadline acted once: an operator's retry afterwards is not undone.
        assert store.retry(job.id) == jobtable.RetryResult.RETRIED
        await asyncio.sleep(3 * LEASE)  # a few maintenance rounds
        assert status(store, job.id) == Status.QUEUED
    finally:
        runner.stop()
        await runner.wait()


async def test_cancel_workflow_before_the_deadline_leaves_nothing_for_it(
    store: jobtable.Store, clock: FrozenClock
) -> None:
    wf = jobtable.Workflow("report", deadline=datetime.timedelta(minutes=5))
    job = wf.add(parked, "b")
    wf.enqueue(store)
    assert store.cancel_workflow(wf.id) == 1
    clock.advance(minutes=10)
    runner = quick_runner(store)
    await runner.start()
    try:
        await asyncio.sleep(2 * LEASE)
    finally:
        runner.stop()
        await runner.wait()
    # Cancelled by the operator before the deadline: the reason is not the deadline's.
    assert store.inspect(job.id).cancelled_because is None


def test_a_bad_deadline_is_refused() -> None:
    with pytest.raises(ValueError, match="aware datetime"):
        jobtable.Workflow("w", deadline=datetime.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="positive timedelta"):
        jobtable.Workflow("w", deadline=datetime.timedelta(0))
    with pytest.raises(TypeError, match="deadline must be"):
        jobtable.Workflow("w", deadline=5)  # type: ignore[arg-type]


def test_a_sub_workflow_with_a_deadline_is_refused(store: jobtable.Store) -> None:
    refused: list[str] = []
    runner = quick_runner(store)

    @runner.handler(outer)
    def do_outer(ctx: jobtable.JobContext[str], text: str) -> str:
        sub = jobtable.Workflow("sub", deadline=datetime.timedelta(minutes=1))
        sub.add(quick, text)
        try:
            ctx.add_workflow(sub)
        except ValueError as error:
            refused.append(str(error))
        return text

    wf = jobtable.Workflow("outer")
    wf.add(outer, "x")
    wf.enqueue(store)
    jobtable.testing.drain_sync(runner)
    assert len(refused) == 1
    assert "no deadline" in refused[0]
