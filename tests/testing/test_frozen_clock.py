"""FrozenClock: the store's time stands still until the test moves it."""

import datetime

import pytest

import jobtable
from jobtable.testing import FrozenClock

T0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


def test_the_clock_stands_still_until_moved() -> None:
    clock = FrozenClock(T0)
    assert clock() == clock() == T0
    assert clock.advance(minutes=5) == T0 + datetime.timedelta(minutes=5)
    assert clock.advance(datetime.timedelta(hours=1), seconds=1) == T0 + datetime.timedelta(
        hours=1, minutes=5, seconds=1
    )
    clock.set(T0)
    assert clock() == T0
    assert clock.advance(seconds=-1) == T0 - datetime.timedelta(seconds=1)


def test_it_starts_at_the_real_time_in_utc() -> None:
    before = datetime.datetime.now(datetime.UTC)
    clock = FrozenClock()
    assert before <= clock() <= datetime.datetime.now(datetime.UTC)
    berlin = datetime.timezone(datetime.timedelta(hours=1))
    assert FrozenClock(T0.astimezone(berlin))().tzinfo is datetime.UTC


def test_a_naive_time_or_a_wrong_step_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        FrozenClock(datetime.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        FrozenClock().set(datetime.datetime(2030, 1, 1))
    with pytest.raises(TypeError, match="timedelta"):
        FrozenClock().advance(5)  # type: ignore[arg-type]


async def test_a_store_on_the_clock_schedules_by_it(store_target: str) -> None:
    clock = FrozenClock(T0)
    ping = jobtable.Kind("ping", int, int)
    with jobtable.Store.open(store_target, clock=clock) as store:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(ping)
        async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
            return payload

        job_id = ping.enqueue(store, 1, delay=datetime.timedelta(minutes=5))
        record = store.inspect(job_id)
        assert (record.created_at, record.run_at) == (T0, T0 + datetime.timedelta(minutes=5))
        assert await runner.run_next() is None
        clock.advance(minutes=5)
        assert await runner.run_next() == job_id
