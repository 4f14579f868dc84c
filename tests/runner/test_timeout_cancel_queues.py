"""Timeouts, cancels and queues of a running runner, on both engines.

Nothing here asserts a duration: each test waits on events or on the table,
with generous limits.
"""

import asyncio
import datetime
import threading
from collections.abc import Awaitable, Callable

import pytest

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
LIMIT = 20.0


def status_is(store: jobtable.Store, job_id: str, status: jobtable.Status) -> Callable[[], bool]:
    return lambda: store.get(job_id).status is status


async def test_an_async_handler_past_its_timeout_is_cancelled_and_its_attempt_fails(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    slow = jobtable.Kind("slow", int, int, timeout=0.2)
    runner = jobtable.Runner(store, workers=1)
    cancelled = asyncio.Event()

    @runner.handler(slow)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return payload

    job_id = slow.enqueue(store, 1)
    assert await runner.run_next() == job_id
    assert cancelled.is_set()
    record = store.inspect(job_id)
    assert (record.status, record.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_TIMED_OUT)


async def test_a_handler_that_raises_timeout_error_itself_is_no_timeout(
    store: jobtable.Store,
) -> None:
    raising = jobtable.Kind("raising", int, int, timeout=60)
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(raising)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise TimeoutError("the dependency timed out")

    job_id = raising.enqueue(store, 1)
    await runner.run_next()
    assert store.get(job_id).error == jobtable.MESSAGE_INTERNAL


async def test_a_sync_handler_past_its_timeout_is_told_and_its_late_writes_are_fenced_off(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    stuck = jobtable.Kind("stuck", int, int, timeout=0.2, max_attempts=2)
    runner = jobtable.Runner(store, workers=1)
    release = threading.Event()
    late: list[BaseException] = []
    told: list[bool] = []

    @runner.handler(stuck)
    def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        if ctx.attempt == 1:
            release.wait(LIMIT)
            told.append(ctx.cancelled)
            try:
                ctx.publish(99)
            except jobtable.NotRunning as err:
                late.append(err)
            return 99
        return ctx.attempt

    job_id = stuck.enqueue(store, 1)
    await runner.start()
    try:
        # The first attempt times out while its thread still runs; the
        # second (after the default backoff of about a second) succeeds.
        await wait_until(status_is(store, job_id, jobtable.Status.SUCCEEDED), limit=LIMIT)
        release.set()
        await wait_until(lambda: bool(late), limit=LIMIT)
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    record = store.inspect(job_id)
    assert (record.result, record.attempt) == (2, 2)
    assert [e.error for e in record.errors] == [jobtable.MESSAGE_TIMED_OUT]
    assert told == [True]


async def test_cancelling_a_queued_job_cancels_it_at_once_and_it_never_runs(
    store: jobtable.Store,
) -> None:
    ping = jobtable.Kind("ping", int, int)
    runner = jobtable.Runner(store, workers=1)
    ran: list[int] = []

    @runner.handler(ping)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        ran.append(payload)
        return payload

    job_id = ping.enqueue(store, 1)
    assert store.cancel(job_id) is jobtable.CancelResult.CANCELLED
    record = store.inspect(job_id)
    assert (record.status, record.error) == (jobtable.Status.CANCELLED, None)
    assert record.finished_at is not None
    assert await runner.run_next() is None
    assert ran == []
    assert await store.acancel(job_id) is jobtable.CancelResult.FINISHED
    with pytest.raises(jobtable.JobNotFound):
        store.cancel("no-such-job")


async def test_cancelling_a_finished_job_changes_nothing_and_says_so(
    store: jobtable.Store,
) -> None:
    ping = jobtable.Kind("ping", int, int)
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(ping)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    job_id = ping.enqueue(store, 7)
    await runner.run_next()
    before = store.inspect(job_id)
    assert store.cancel(job_id) is jobtable.CancelResult.FINISHED
    assert store.inspect(job_id) == before


async def cancel_while_running(
    store: jobtable.Store,
    runner: jobtable.Runner,
    cancel: Callable[[str], Awaitable[jobtable.CancelResult]],
    wait_until: WaitUntil,
) -> str:
    """Runs a job whose async handler sleeps for an hour, cancels it, waits until it is cancelled.

    Returns the job's id once its handler saw the cancellation.
    """
    long = jobtable.Kind("long", int, int, max_attempts=3)
    started = asyncio.Event()
    cancelled = asyncio.Event()

    @runner.handler(long)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return payload

    job_id = long.enqueue(store, 1)
    await runner.start()
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        assert await cancel(job_id) is jobtable.CancelResult.REQUESTED
        await wait_until(status_is(store, job_id, jobtable.Status.CANCELLED), limit=LIMIT)
    finally:
        runner.stop()
        await runner.wait()
    assert cancelled.is_set()
    return job_id


async def test_cancelling_a_running_async_job_cancels_its_handler(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store, workers=1, cancel_check=0.05)
    job_id = await cancel_while_running(store, runner, store.acancel, wait_until)
    record = store.inspect(job_id)
    assert (record.error, record.attempt, record.errors) == (None, 1, [])


async def test_a_cancel_on_postgres_reaches_the_holding_runner_by_notify_not_its_poll(
    pg_url: str, wait_until: WaitUntil
) -> None:
    """The runner's poll of cancel requests is an hour apart: only the NOTIFY can be in time."""
    with (
        jobtable.Store.open(pg_url) as store,
        # Another store cancels, as another process would.
        jobtable.Store.open(pg_url) as other,
    ):
        runner = jobtable.Runner(store, workers=1, cancel_check=3600.0)
        await cancel_while_running(store, runner, other.acancel, wait_until)


async def test_cancelling_a_running_sync_job_tells_its_handler(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    long = jobtable.Kind("long", int, int)
    runner = jobtable.Runner(store, workers=1, cancel_check=0.05)
    started = threading.Event()
    saw_cancel = threading.Event()

    @runner.handler(long)
    def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        started.set()
        while not ctx.cancelled:
            if ctx.sleep(0.01):
                break
        saw_cancel.set()
        return payload

    job_id = long.enqueue(store, 1)
    await runner.start()
    try:
        await asyncio.to_thread(started.wait, LIMIT)
        assert store.cancel(job_id) is jobtable.CancelResult.REQUESTED
        await wait_until(status_is(store, job_id, jobtable.Status.CANCELLED), limit=LIMIT)
        await asyncio.to_thread(saw_cancel.wait, LIMIT)
    finally:
        runner.stop()
        await runner.wait()
    assert saw_cancel.is_set()
    assert store.get(job_id).result is None


async def test_a_flood_of_one_queue_never_starves_another(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    bulk = jobtable.Kind("bulk", int, int)
    email = jobtable.Kind("email", int, int, queue="email")
    runner = jobtable.Runner(store, queues={"default": 2, "email": 1})
    release = asyncio.Event()
    running_bulk: set[int] = set()

    @runner.handler(bulk)
    async def flood(ctx: jobtable.JobContext[int], payload: int) -> int:
        running_bulk.add(payload)
        await release.wait()
        return payload

    @runner.handler(email)
    async def send(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    bulk_ids = bulk.enqueue_many(store, range(50))
    await runner.start()
    try:
        await wait_until(lambda: len(running_bulk) == 2, limit=LIMIT)
        mail = email.enqueue(store, 1)
        # Every default slot is held, fifty jobs wait: the email still runs.
        await wait_until(status_is(store, mail, jobtable.Status.SUCCEEDED), limit=LIMIT)
        assert len(running_bulk) == 2
        assert store.counts()["default"][jobtable.Status.QUEUED] == 48
        release.set()
        await wait_until(
            lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in bulk_ids),
            limit=LIMIT,
        )
    finally:
        release.set()
        runner.stop()
        await runner.wait()


def test_workers_is_the_default_queues_shorthand_and_bad_queues_are_refused(
    store: jobtable.Store,
) -> None:
    assert jobtable.Runner(store, workers=3).queues == {"default": 3}
    assert jobtable.Runner(store).queues == {"default": 4}
    with pytest.raises(ValueError, match="not both"):
        jobtable.Runner(store, workers=2, queues={"a": 1})
    with pytest.raises(ValueError, match="queue 'a'"):
        jobtable.Runner(store, queues={"a": 0})
    with pytest.raises(ValueError, match="queues"):
        jobtable.Runner(store, queues={})


async def test_a_runner_wakes_for_a_scheduled_job_before_its_next_poll(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    ping = jobtable.Kind("ping", int, int)
    # The poll is far off: only the wake-up at run_at can start the job in time.
    runner = jobtable.Runner(store, workers=1, poll_interval=3600)

    @runner.handler(ping)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    await runner.start()
    try:
        job_id = ping.enqueue(store, 1, delay=datetime.timedelta(seconds=0.3))
        await wait_until(status_is(store, job_id, jobtable.Status.SUCCEEDED), limit=LIMIT)
    finally:
        runner.stop()
        await runner.wait()
    record = store.inspect(job_id)
    assert record.started_at is not None
    assert record.started_at >= record.run_at
