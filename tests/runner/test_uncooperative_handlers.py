"""Handlers that ignore cancellation or block the event loop cannot hold a runner for ever.

An ``async def`` handler that swallows ``CancelledError`` (a broad
``except BaseException``) cannot be made to end. The runner records its job
as the cancel said (cancelled, timed out, interrupted) once ``cancel_grace``
has passed, gives its worker slot to a new worker, and fences off whatever
the handler returns later. One that blocks the event loop is named in a
warning. Real processes and signals are in test_uncooperative_processes.py.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import pytest

import jobtable

WaitUntil = Callable[..., Awaitable[None]]


class Stubborn:
    """A kind whose async handler swallows every cancel, until released; then it returns 99."""

    def __init__(self, runner: jobtable.Runner) -> None:
        self.kind = jobtable.Kind("stubborn", int, int)
        self.inside = asyncio.Event()
        self.release = asyncio.Event()
        self.swallowed = 0
        self.returned = asyncio.Event()
        runner.handler(self.kind)(self.handle)

    async def handle(self, ctx: jobtable.JobContext[int], payload: int) -> int:
        self.inside.set()
        while not self.release.is_set():
            try:
                await self.release.wait()
            except BaseException:
                self.swallowed += 1
        self.returned.set()
        return 99

    async def let_go(self) -> None:
        """Lets the handler return, so that the test's event loop can close."""
        self.release.set()
        await asyncio.wait_for(self.returned.wait(), 60)


async def test_a_stop_records_a_handler_that_swallows_its_cancel_interrupted_and_returns(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, workers=1, grace_period=0.05, cancel_grace=0.1)
    stubborn = Stubborn(runner)
    job_id = stubborn.kind.enqueue(store, 1)
    await runner.start()
    await wait_until(stubborn.inside.is_set)
    runner.stop()
    await asyncio.wait_for(runner.wait(), 60)
    await stubborn.let_go()
    assert stubborn.swallowed  # it did get the cancel, and ignored it
    job = store.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    [gave_up] = [r for r in caplog.records if "did not end within" in r.getMessage()]
    assert (gave_up.__dict__["job_id"], gave_up.__dict__["kind"]) == (job_id, "stubborn")


async def test_a_stop_puts_an_interrupted_job_with_attempts_left_back_in_its_queue(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store, workers=1, grace_period=0.05, cancel_grace=0.1)
    stubborn = Stubborn(runner)
    job_id = stubborn.kind.enqueue(store, 1, max_attempts=3)
    await runner.start()
    await wait_until(stubborn.inside.is_set)
    runner.stop()
    await asyncio.wait_for(runner.wait(), 60)
    await stubborn.let_go()
    record = store.inspect(job_id)
    assert (record.status, record.attempt) == (jobtable.Status.QUEUED, 1)
    assert [e.error for e in record.errors] == [jobtable.MESSAGE_INTERRUPTED]


async def test_a_cancel_of_a_handler_that_swallows_it_records_the_job_cancelled_and_frees_its_slot(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    quick = jobtable.Kind("quick", int, int)
    runner = jobtable.Runner(store, workers=1, cancel_grace=0.1, cancel_check=0.05)
    stubborn = Stubborn(runner)

    @runner.handler(quick)
    async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
        return 2 * payload

    stuck_id = stubborn.kind.enqueue(store, 1)
    next_id = quick.enqueue(store, 21)
    await runner.start()
    try:
        await wait_until(stubborn.inside.is_set)
        assert store.cancel(stuck_id) is jobtable.CancelResult.REQUESTED
        # The only worker slot runs the next job once the stuck one is given up on.
        await wait_until(lambda: store.get(next_id).status is jobtable.Status.SUCCEEDED, limit=60)
    finally:
        runner.stop()
        await asyncio.wait_for(runner.wait(), 60)
        await stubborn.let_go()
    assert store.get(stuck_id).status is jobtable.Status.CANCELLED
    assert store.get(next_id).result == 42
    assert stubborn.swallowed
    [gave_up] = [r for r in caplog.records if "did not end within" in r.getMessage()]
    assert "its cancel" in gave_up.getMessage()
    assert (gave_up.__dict__["job_id"], gave_up.__dict__["kind"]) == (stuck_id, "stubborn")


async def test_the_late_result_of_a_handler_given_up_on_is_dropped(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, workers=1, cancel_grace=0.05, cancel_check=0.05)
    stubborn = Stubborn(runner)
    job_id = stubborn.kind.enqueue(store, 1)
    await runner.start()
    try:
        await wait_until(stubborn.inside.is_set)
        store.cancel(job_id)
        await wait_until(lambda: store.get(job_id).status is jobtable.Status.CANCELLED, limit=60)
        stubborn.release.set()
        await wait_until(stubborn.returned.is_set)
        await asyncio.sleep(0)  # the stuck worker sees its handler's result
    finally:
        runner.stop()
        await asyncio.wait_for(runner.wait(), 60)
        await stubborn.let_go()
    job = store.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.CANCELLED, None)
    assert not [r for r in caplog.records if "not running under this claim" in r.getMessage()]


async def test_a_timeout_of_a_handler_that_swallows_it_fails_the_attempt_and_frees_its_slot(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store, workers=1, cancel_grace=0.05)
    stubborn = Stubborn(runner)
    job_id = stubborn.kind.enqueue(store, 1, timeout=0.05)
    await runner.start()
    try:
        await wait_until(lambda: store.get(job_id).status is jobtable.Status.FAILED, limit=60)
    finally:
        runner.stop()
        await asyncio.wait_for(runner.wait(), 60)
        await stubborn.let_go()
    assert store.get(job_id).error == jobtable.MESSAGE_TIMED_OUT


async def test_an_async_handler_that_blocks_the_event_loop_is_named_in_a_warning(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    blocker = jobtable.Kind("blocker", int, int)
    runner = jobtable.Runner(store, workers=1, block_warning=0.1)

    @runner.handler(blocker)
    async def block(ctx: jobtable.JobContext[int], payload: int) -> int:
        time.sleep(1.0)  # noqa: ASYNC251 (the misbehaviour under test)
        return payload

    job_id = blocker.enqueue(store, 1)
    await runner.start()
    try:
        await wait_until(lambda: store.get(job_id).status is jobtable.Status.SUCCEEDED, limit=60)
    finally:
        runner.stop()
        await asyncio.wait_for(runner.wait(), 60)
    [warning] = [r for r in caplog.records if "blocked the event loop" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    fields = (warning.__dict__["job_id"], warning.__dict__["kind"], warning.__dict__["attempt"])
    assert fields == (job_id, "blocker", 1)


async def test_no_block_warning_without_the_watch(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    blocker = jobtable.Kind("blocker", int, int)
    runner = jobtable.Runner(store, workers=1, block_warning=None)

    @runner.handler(blocker)
    async def block(ctx: jobtable.JobContext[int], payload: int) -> int:
        time.sleep(0.3)  # noqa: ASYNC251 (blocks the loop, unwatched)
        return payload

    job_id = blocker.enqueue(store, 1)
    await runner.start()
    try:
        await wait_until(lambda: store.get(job_id).status is jobtable.Status.SUCCEEDED, limit=60)
    finally:
        runner.stop()
        await asyncio.wait_for(runner.wait(), 60)
    assert not [r for r in caplog.records if "blocked the event loop" in r.getMessage()]
