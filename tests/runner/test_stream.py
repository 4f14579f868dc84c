"""Streaming a job's progress: Kind.stream yields each partial result as it is published.

The registry's safety-net poll is an hour long in these tests and each
stream's own poll too, so an update that arrives was woken by PostgreSQL's
NOTIFY of the publish or SQLite's file watch, never by polling.
"""

import asyncio
import contextlib
import datetime
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel

import jobtable
from jobtable._wait.waiters import Waiters, waiters_of


class Step(BaseModel):
    done: int


count = jobtable.Kind("count", int, Step)
other = jobtable.Kind("other", int, int)


@pytest.fixture
def waiters(store: jobtable.Store) -> Waiters:
    """The store's registry of waits, its safety-net poll an hour long."""
    registry = waiters_of(store, store.engine)
    registry.poll = 3600.0
    return registry


@pytest.fixture
def gate() -> "asyncio.Queue[None]":
    """What the handler waits for before each publish after its first."""
    return asyncio.Queue()


@pytest.fixture
async def runner(
    store: jobtable.Store, gate: "asyncio.Queue[None]"
) -> AsyncIterator[jobtable.Runner]:
    """A runner whose count handler publishes 0..n-1, one per gate token, then ends.

    A negative payload publishes once and fails with a Failure; zero raises
    an exception whose text must never be shown.
    """
    runner = jobtable.Runner(store, workers=2)

    @runner.handler(count)
    async def counting(ctx: jobtable.JobContext[Step], payload: int) -> Step:
        if payload == 0:
            raise RuntimeError("password=hunter2")
        await ctx.apublish(Step(done=0))
        if payload < 0:
            raise jobtable.Failure("cannot count down")
        for done in range(1, payload):
            await gate.get()
            await ctx.apublish(Step(done=done if done != 2 else 1))
        await gate.get()
        return Step(done=payload)

    yield runner
    runner.stop()
    await runner.wait()


async def test_a_stream_yields_each_partial_as_published_then_the_result(
    store: jobtable.Store,
    runner: jobtable.Runner,
    waiters: Waiters,
    gate: "asyncio.Queue[None]",
) -> None:
    job_id = count.enqueue(store, 3)
    await runner.start()
    seen: list[tuple[jobtable.Status, Step | None]] = []
    async for job in count.stream(store, job_id):
        assert isinstance(job, jobtable.Job)
        seen.append((job.status, job.result))
        if job.status is jobtable.Status.RUNNING and job.result is not None:
            gate.put_nowait(None)
    partials = [result for status, result in seen if status is jobtable.Status.RUNNING]
    # The third publish repeats the second's value: it is a new publish all the same.
    assert [p for p in partials if p is not None] == [Step(done=0), Step(done=1), Step(done=1)]
    assert seen[-1] == (jobtable.Status.SUCCEEDED, Step(done=3))
    assert waiters._watches == {}


async def test_a_failed_job_ends_its_stream_with_its_failure_message_only(
    store: jobtable.Store, runner: jobtable.Runner, waiters: Waiters
) -> None:
    declined, crashed = count.enqueue(store, -1), count.enqueue(store, 0)
    await runner.start()
    updates = [job async for job in count.stream(store, declined)]
    assert (updates[-1].status, updates[-1].error) == (jobtable.Status.FAILED, "cannot count down")
    assert updates[-1].result == Step(done=0)
    [*_, last] = [job async for job in count.stream(store, crashed)]
    assert (last.status, last.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert "hunter2" not in last.model_dump_json()


async def test_a_stream_of_an_ended_job_yields_it_once(
    store: jobtable.Store, waiters: Waiters
) -> None:
    job_id = count.enqueue(store, 1)
    store.cancel(job_id)
    updates = [job async for job in count.stream(store, job_id)]
    assert [(job.status, job.result) for job in updates] == [(jobtable.Status.CANCELLED, None)]


async def test_a_stream_of_a_queued_job_yields_it_then_its_cancel(
    store: jobtable.Store, waiters: Waiters
) -> None:
    job_id = count.enqueue(store, 1)
    stream = count.stream(store, job_id)
    first = await anext(stream)
    assert first.status is jobtable.Status.QUEUED
    store.cancel(job_id)
    assert (await anext(stream)).status is jobtable.Status.CANCELLED
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert waiters._watches == {}


async def test_leaving_a_stream_early_ends_its_watch(
    store: jobtable.Store, waiters: Waiters
) -> None:
    job_id = count.enqueue(store, 1)
    async with contextlib.aclosing(count.stream(store, job_id)) as updates:
        async for job in updates:
            assert job.status is jobtable.Status.QUEUED
            assert len(waiters._watches) == 1
            break
    assert waiters._watches == {}


async def test_a_stream_of_an_unknown_job_or_another_kind_raises_job_not_found(
    store: jobtable.Store, waiters: Waiters
) -> None:
    with pytest.raises(jobtable.JobNotFound):
        await anext(count.stream(store, "no-such-job"))
    elsewhere = other.enqueue(store, 1)
    with pytest.raises(jobtable.JobNotFound, match="'other' job, not 'count'"):
        await anext(count.stream(store, elsewhere))
    with pytest.raises(TypeError, match="job id is int"):
        count.stream(store, 7)  # type: ignore[call-overload]
    assert waiters._watches == {}


nap = jobtable.Kind("stream-nap", int, int)


async def test_a_stream_sees_a_job_leave_its_worker_to_sleep(
    store: jobtable.Store, waiters: Waiters
) -> None:
    runner = jobtable.Runner(store, workers=1)
    seen_running = asyncio.Event()

    @runner.handler(nap)
    async def napping(ctx: jobtable.JobContext[int], payload: int) -> int:
        # Publishes, so that a stream on PostgreSQL is woken to see it run
        # (a claim notifies no one), and sleeps only once the stream saw it:
        # a status never read between two alike (queued, then queued asleep)
        # is not yielded.
        await ctx.apublish(0)
        await seen_running.wait()
        await ctx.sleep_for(datetime.timedelta(hours=1))
        return payload

    job_id = nap.enqueue(store, 1)
    stream = nap.stream(store, job_id)
    assert (await anext(stream)).status is jobtable.Status.QUEUED
    await runner.start()
    try:
        job = await asyncio.wait_for(anext(stream), 10)
        assert job.status is jobtable.Status.RUNNING
        seen_running.set()
        # Woken by the suspend's notification or file write: both polls are an hour.
        while job.status is jobtable.Status.RUNNING:  # the publish may come next
            job = await asyncio.wait_for(anext(stream), 10)
        assert job.status is jobtable.Status.QUEUED
    finally:
        seen_running.set()
        await stream.aclose()
        runner.stop()
        await runner.wait()
