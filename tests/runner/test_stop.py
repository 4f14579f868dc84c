"""Stop: cooperative, with a grace period, and never losing a job.

A handler sees the runner stopping (ctx.stopping, ctx.sleep, ctx.asleep);
what it returns during the grace period is recorded. A handler that raises
after stop began, or is cancelled when the grace period runs out, leaves its
job running, and the next start of a runner of the same name fails it as
interrupted.
"""

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

import pytest
from handled import handled

import jobtable
from jobtable._runner.maintenance import RESTARTED

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


async def stop_and_wait(runner: jobtable.Runner, *, limit: float = 20) -> None:
    """Stops runner and waits for it, failing the test if it takes more than limit seconds."""
    runner.stop()
    try:
        await asyncio.wait_for(runner.wait(), limit)
    except TimeoutError:
        pytest.fail(f"the runner did not stop within {limit} s")


async def restart_fails_as_interrupted(
    store: jobtable.Store, name: str, job_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Starts a new runner named name and checks that it fails job_id as interrupted."""
    caplog.clear()
    restarted = handled(jobtable.Runner(store, name=name))
    await restarted.start()
    await stop_and_wait(restarted)
    job = restarted.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    [warning] = [r for r in caplog.records if r.msg == RESTARTED]
    assert warning.levelno == logging.WARNING
    assert warning.__dict__["count"] == 1


async def test_an_async_handler_sees_ctx_stopping(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = asyncio.Event()
    seen: list[bool] = []

    async def handler(ctx: jobtable.JobContext[str], payload: int) -> str:
        seen.append(ctx.stopping)
        in_handler.set()
        while not ctx.stopping:  # noqa: ASYNC110 (polling the flag is what is tested)
            await asyncio.sleep(0.01)
        return "stopped early"

    runner = jobtable.Runner(store, grace_period=30)
    job_id = runner.register("loop", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    assert not runner.stopping
    await stop_and_wait(runner)
    assert runner.stopping
    assert seen == [False]
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "stopped early")


async def test_a_sync_handler_sees_ctx_stopping(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = threading.Event()

    def handler(ctx: jobtable.JobContext[str], payload: int) -> str:
        in_handler.set()
        while not ctx.stopping:
            threading.Event().wait(0.01)
        return "stopped early"

    runner = jobtable.Runner(store, grace_period=30)
    job_id = runner.register("loop", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    await stop_and_wait(runner)
    assert runner.get(job_id).result == "stopped early"


async def test_ctx_asleep_returns_early_and_true_on_stop(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        in_handler.set()
        return await ctx.asleep(3600)

    runner = jobtable.Runner(store, grace_period=60)
    job_id = runner.register("sleep", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    await stop_and_wait(runner)
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, True)


async def test_ctx_sleep_returns_early_and_true_on_stop_in_a_sync_handler(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = threading.Event()

    def handler(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        in_handler.set()
        return ctx.sleep(3600)

    runner = jobtable.Runner(store, grace_period=60)
    job_id = runner.register("sleep", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    await stop_and_wait(runner)
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, True)


async def test_ctx_sleep_and_asleep_return_false_when_the_time_is_up(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    async def async_handler(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        return await ctx.asleep(0.01)

    def sync_handler(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        return ctx.sleep(0.01)

    runner = jobtable.Runner(store)
    ids = [
        runner.register("async", async_handler).enqueue(0),
        runner.register("sync", sync_handler).enqueue(0),
    ]
    await runner.start()
    try:
        await wait_until(finished(runner, ids))
    finally:
        await stop_and_wait(runner)
    assert [runner.get(i).result for i in ids] == [False, False]


async def test_a_handler_that_finishes_during_the_grace_period_is_recorded(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = asyncio.Event()
    release = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[str], payload: int) -> str:
        in_handler.set()
        await release.wait()
        await ctx.apublish("still publishing")
        return "done" if ctx.stopping else "not stopping"

    runner = jobtable.Runner(store, grace_period=60)
    job_id = runner.register("work", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    runner.stop()
    release.set()
    await stop_and_wait(runner)
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "done")


async def test_a_sync_handler_that_finishes_during_the_grace_period_is_recorded(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = threading.Event()
    release = threading.Event()

    def handler(ctx: jobtable.JobContext[str], payload: int) -> str:
        in_handler.set()
        if not release.wait(30):
            raise AssertionError("the test never released the handler")
        return "done"

    runner = jobtable.Runner(store, grace_period=60)
    job_id = runner.register("work", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    runner.stop()
    release.set()
    await stop_and_wait(runner)
    assert runner.get(job_id).status is jobtable.Status.SUCCEEDED


@pytest.mark.parametrize(
    "error", [RuntimeError("lost the connection"), jobtable.Failure("Gave up.")]
)
async def test_a_handler_that_raises_after_stop_began_leaves_its_job_running_until_the_next_start(
    store: jobtable.Store,
    wait_until: WaitUntil,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    in_handler = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        await ctx.asleep(3600)
        raise error

    runner = jobtable.Runner(store, name="worker", grace_period=60)
    job_id = runner.register("work", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    await stop_and_wait(runner)
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.RUNNING, None)
    [record] = [r for r in caplog.records if r.exc_info and r.exc_info[1] is error]
    assert record.levelno == logging.WARNING
    assert record.__dict__["job_id"] == job_id
    await restart_fails_as_interrupted(store, "worker", job_id, caplog)


async def test_the_grace_period_running_out_cancels_an_async_handler_and_records_it_interrupted(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = asyncio.Event()
    cancelled = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        try:
            await asyncio.Event().wait()  # ignores stop
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    runner = jobtable.Runner(store, name="worker", grace_period=0.05)
    job_id = runner.register("stubborn", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    await stop_and_wait(runner)
    assert cancelled.is_set()
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)


async def test_the_grace_period_running_out_does_not_wait_for_a_sync_handler(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = threading.Event()
    release = threading.Event()

    def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        release.wait(30)  # ignores stop
        return 1

    runner = jobtable.Runner(store, name="worker", grace_period=0.05)
    job_id = runner.register("stubborn", handler).enqueue(0)
    await runner.start()
    try:
        await wait_until(in_handler.is_set)
        await stop_and_wait(runner)
        job = runner.get(job_id)
        assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    finally:
        release.set()


async def test_stop_claims_no_more_jobs(store: jobtable.Store, wait_until: WaitUntil) -> None:
    in_handler = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        await ctx.asleep(3600)
        return payload

    runner = jobtable.Runner(store, workers=1, poll_interval=0.01)
    ids = runner.register("work", handler).enqueue_many([1, 2, 3])
    await runner.start()
    await wait_until(in_handler.is_set)
    await stop_and_wait(runner)
    assert [runner.get(i).status for i in ids] == [
        jobtable.Status.SUCCEEDED,
        jobtable.Status.QUEUED,
        jobtable.Status.QUEUED,
    ]


async def test_a_second_start_is_a_runner_error(store: jobtable.Store) -> None:
    runner = handled(jobtable.Runner(store))
    await runner.start()
    try:
        with pytest.raises(jobtable.RunnerError, match="already started"):
            await runner.start()
    finally:
        await stop_and_wait(runner)
    # After stop, the error says why: the runner was stopped (test_stop_signals.py).
    with pytest.raises(jobtable.RunnerError, match="the runner was stopped"):
        await runner.start()


def jobtable_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("jobtable-")]


async def test_wait_returns_once_every_worker_has_stopped(store: jobtable.Store) -> None:
    runner = handled(jobtable.Runner(store, workers=3))
    await runner.start()
    assert len(jobtable_tasks()) >= 3
    await stop_and_wait(runner)
    assert jobtable_tasks() == []


async def test_wait_before_start_returns_at_once(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    await asyncio.wait_for(runner.wait(), 20)


async def test_stop_before_start_runs_no_job(store: jobtable.Store) -> None:
    """The start says so (test_stop_signals.py) instead of silently doing nothing."""

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    runner = jobtable.Runner(store)
    job_id = runner.register("work", handler).enqueue(1)
    runner.stop()
    with pytest.raises(jobtable.RunnerError, match="the runner was stopped"):
        await runner.start()
    await stop_and_wait(runner)
    assert runner.get(job_id).status is jobtable.Status.QUEUED


async def test_stop_from_another_thread_stops_the_runner(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        in_handler.set()
        return await ctx.asleep(3600)

    runner = jobtable.Runner(store, grace_period=60)
    job_id = runner.register("sleep", handler).enqueue(0)
    await runner.start()
    await wait_until(in_handler.is_set)
    await asyncio.to_thread(runner.stop)
    await asyncio.wait_for(runner.wait(), 20)
    assert runner.get(job_id).result is True
