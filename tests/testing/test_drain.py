"""jobtable.testing.drain: every job a runner would run, inline, to its end.

Each test runs on both engines, on a store whose clock is a FrozenClock.
"""

import datetime
import logging
from collections.abc import Iterator

import pytest

import jobtable
from jobtable.testing import FrozenClock, assert_enqueued, drain, drain_sync

Status = jobtable.Status
UTC = datetime.UTC


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC))


@pytest.fixture
def timed_store(store_target: str, clock: FrozenClock) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target, clock=clock) as opened:
        yield opened


order = jobtable.Kind("order", int, str)
receipt = jobtable.Kind("receipt", int, str)
flaky = jobtable.Kind(
    "flaky", int, int, max_attempts=3, retry=lambda attempt: datetime.timedelta(hours=attempt)
)


def shop(store: jobtable.Store) -> jobtable.Runner:
    """A runner whose order handler enqueues a receipt, and whose flaky one fails twice."""
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(order)
    async def take_order(ctx: jobtable.JobContext[str], payload: int) -> str:
        await receipt.aenqueue(store, payload)
        return f"order {payload}"

    @runner.handler(receipt)
    def send_receipt(ctx: jobtable.JobContext[str], payload: int) -> str:
        return f"receipt {payload}"

    @runner.handler(flaky)
    async def sometimes(ctx: jobtable.JobContext[int], payload: int) -> int:
        if ctx.attempt < 3:
            raise RuntimeError("token=hunter2")
        return ctx.attempt

    return runner


async def test_drain_runs_queued_jobs_and_those_their_handlers_enqueue(
    timed_store: jobtable.Store,
) -> None:
    runner = shop(timed_store)
    first = order.enqueue(timed_store, 1)
    second = order.enqueue(timed_store, 2)
    records = await drain(runner)
    assert [(r.kind, r.status, r.result) for r in records] == [
        ("order", Status.SUCCEEDED, "order 1"),
        ("order", Status.SUCCEEDED, "order 2"),
        ("receipt", Status.SUCCEEDED, "receipt 1"),
        ("receipt", Status.SUCCEEDED, "receipt 2"),
    ]
    assert [r.id for r in records[:2]] == [first, second]
    assert await drain(runner) == []


async def test_drain_runs_retries_at_once_and_keeps_their_backoff_on_record(
    timed_store: jobtable.Store, clock: FrozenClock
) -> None:
    runner = shop(timed_store)
    job_id = flaky.enqueue(timed_store, 1)
    [record] = await drain(runner)
    assert (record.id, record.status, record.result, record.attempt) == (
        job_id,
        Status.SUCCEEDED,
        3,
        3,
    )
    assert [e.error for e in record.errors] == [jobtable.MESSAGE_INTERNAL] * 2
    assert record.run_at == clock() + datetime.timedelta(hours=2)
    assert "hunter2" not in record.model_dump_json()


async def test_drain_without_retries_leaves_a_failed_attempt_waiting_for_its_backoff(
    timed_store: jobtable.Store, clock: FrozenClock
) -> None:
    runner = shop(timed_store)
    job_id = flaky.enqueue(timed_store, 1)
    [record] = await drain(runner, retries=False)
    assert (record.status, record.attempt) == (Status.QUEUED, 1)
    clock.advance(hours=1)
    [record] = await drain(runner, retries=False)
    assert (record.status, record.attempt) == (Status.QUEUED, 2)
    [record] = await drain(runner)
    assert (record.id, record.status, record.attempt) == (job_id, Status.SUCCEEDED, 3)


async def test_drain_leaves_scheduled_jobs_for_later_unless_asked(
    timed_store: jobtable.Store, clock: FrozenClock
) -> None:
    runner = shop(timed_store)
    later = order.enqueue(timed_store, 1, delay=datetime.timedelta(days=1))
    # A retry waits alone: the scheduled job must not run with it.
    flaky.enqueue(timed_store, 2)
    assert [r.kind for r in await drain(runner)] == ["flaky"]
    assert timed_store.get(later).status is Status.QUEUED
    clock.advance(hours=23, minutes=59)
    assert await drain(runner) == []
    clock.advance(minutes=1)
    assert [r.id for r in await drain(runner)][:1] == [later]

    tomorrow = order.enqueue(timed_store, 3, run_at=clock() + datetime.timedelta(days=1))
    assert [r.id for r in await drain(runner, scheduled=True)][:1] == [tomorrow]
    assert timed_store.get(tomorrow).status is Status.SUCCEEDED


async def test_drain_runs_the_periodic_ticks_due_by_the_frozen_clock(
    timed_store: jobtable.Store, clock: FrozenClock
) -> None:
    daily = jobtable.Kind("daily", int, int)
    hourly = jobtable.Kind("hourly", int, int)
    clock.set(datetime.datetime(2030, 1, 1, 6, 59, tzinfo=datetime.UTC))
    runner = jobtable.Runner(timed_store, workers=1)

    @runner.handler(daily)
    @runner.handler(hourly)
    async def echo(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    runner.periodic(daily, cron="0 7 * * *", payload=7)
    runner.periodic(hourly, every=datetime.timedelta(hours=1), payload=1, missed="skip")
    # The first drain is the start: yesterday's 07:00 tick is caught up
    # (missed="once"), the hourly one waits for its next tick.
    [first] = await drain(runner)
    assert (first.kind, first.run_at) == ("daily", datetime.datetime(2029, 12, 31, 7, tzinfo=UTC))
    assert await drain(runner) == []
    clock.advance(minutes=1)
    ran = await drain(runner)
    assert sorted((r.kind, r.run_at.hour) for r in ran) == [("daily", 7), ("hourly", 7)]
    assert all(r.status is Status.SUCCEEDED for r in ran)
    clock.advance(hours=3)  # the hourly ticks of 08:00 and 09:00 were missed: one job
    assert [(r.kind, r.run_at.hour) for r in await drain(runner)] == [("hourly", 10)]


async def test_drain_runs_only_the_runners_queues_and_fails_kinds_it_has_no_handler_for(
    timed_store: jobtable.Store,
) -> None:
    runner = shop(timed_store)
    elsewhere = order.enqueue(timed_store, 1, queue="other")
    unknown = jobtable.Kind("unknown", int, int).enqueue(timed_store, 1)
    [record] = await drain(runner)
    assert (record.id, record.status, record.error) == (
        unknown,
        Status.FAILED,
        "no handler for job kind unknown",
    )
    assert timed_store.get(elsewhere).status is Status.QUEUED


async def test_drain_stops_at_max_runs_naming_the_jobs_left(timed_store: jobtable.Store) -> None:
    forever = jobtable.Kind("forever", int, int)
    runner = jobtable.Runner(timed_store, workers=1)

    @runner.handler(forever)
    async def again(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Retry(after=datetime.timedelta(seconds=1))

    job_id = forever.enqueue(timed_store, 1)
    with pytest.raises(AssertionError, match=rf"max_runs=5 .*forever {job_id} \(attempt 5\)"):
        await drain(runner, max_runs=5)
    assert timed_store.inspect(job_id).attempt == 5


async def test_drain_refuses_a_started_runner_and_a_bad_max_runs(
    timed_store: jobtable.Store,
) -> None:
    runner = shop(timed_store)
    with pytest.raises(ValueError, match="max_runs"):
        await drain(runner, max_runs=0)
    await runner.start()
    try:
        with pytest.raises(jobtable.RunnerError, match="started"):
            await drain(runner)
    finally:
        runner.stop()
        await runner.wait()
    with pytest.raises(jobtable.RunnerError, match="stopped"):
        await drain(runner)


def test_drain_sync_runs_jobs_on_one_loop_for_all_drains_of_a_runner(
    timed_store: jobtable.Store,
) -> None:
    napper = jobtable.Kind("napper", int, bool)
    runner = jobtable.Runner(timed_store, workers=1)

    @runner.handler(napper)
    async def nap(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        # Waits on the runner's asyncio event, which binds to the first loop.
        return await ctx.asleep(0.001)

    for n in range(2):
        napper.enqueue(timed_store, n)
        [record] = drain_sync(runner)
        assert (record.status, record.result) == (Status.SUCCEEDED, False)
    assert_enqueued(timed_store, napper, 1, status=Status.SUCCEEDED)


async def test_drain_sync_on_a_running_loop_says_to_await_drain(
    timed_store: jobtable.Store,
) -> None:
    with pytest.raises(RuntimeError, match=r"await drain\(runner\)"):
        drain_sync(shop(timed_store))


napper = jobtable.Kind("napper", int, str)


async def test_a_sleeping_job_stays_queued_until_the_clock_reaches_its_time(
    timed_store: jobtable.Store, clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    runner = jobtable.Runner(timed_store, workers=1)

    @runner.handler(napper)
    async def nap(ctx: jobtable.JobContext[str], payload: int) -> str:
        await ctx.sleep_for(datetime.timedelta(hours=payload))
        return "rested"

    job_id = napper.enqueue(timed_store, 2)
    await drain(runner)
    await drain(runner, scheduled=True)
    assert timed_store.get(job_id).status is Status.QUEUED
    clock.advance(datetime.timedelta(hours=2))
    [record] = await drain(runner)
    assert (record.status, record.result) == (Status.SUCCEEDED, "rested")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
