"""Job options: their checks, how they are stored, priority order, schedules and retries.

Each test runs on both engines. Time is the store's clock, which a test sets
(jobtable.testing's ``FrozenClock``) instead of sleeping.
"""

import dataclasses
import datetime
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

import jobtable
from jobtable._options import Merges, Options
from jobtable.testing import FrozenClock as Clock

WaitUntil = Callable[..., Awaitable[None]]
UTC = datetime.UTC
T0 = datetime.datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def timed_store(store_target: str, clock: Clock) -> Iterator[jobtable.Store]:
    """A fresh store on the test's engine whose clock is the test's."""
    opened = jobtable.Store.open(store_target, clock=clock)
    yield opened
    opened.close()


ping = jobtable.Kind("ping", int, int)


def runner_of(store: jobtable.Store, fn: Callable[[int], int] | None = None) -> jobtable.Runner:
    """A runner of store whose ping handler returns fn(payload) (the payload itself by default)."""
    runner = jobtable.Runner(store, workers=1, name="options")

    @runner.handler(ping)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload if fn is None else fn(payload)

    return runner


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": "3"}, "max_attempts"),
        ({"max_attempts": True}, "max_attempts"),
        ({"priority": 1.5}, "priority"),
        ({"priority": 1 << 40}, "priority"),
        ({"queue": ""}, "queue"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"delay": datetime.timedelta(seconds=-1)}, "delay"),
        ({"run_at": datetime.datetime(2030, 1, 1)}, "run_at"),
        ({"run_at": T0, "delay": datetime.timedelta(seconds=1)}, "run_at or delay"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_option_is_refused_naming_it_and_stores_nothing(
    store: jobtable.Store, options: dict[str, object], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        ping.enqueue(store, 1, **options)  # type: ignore[call-overload]
    with pytest.raises((TypeError, ValueError), match=message):
        ping.enqueue_many(store, [1, 2], **options)  # type: ignore[call-overload]
    assert store.counts() == {}


def test_a_bad_default_is_refused_at_declaration_naming_the_option() -> None:
    with pytest.raises(ValueError, match=r"'k'.*max_attempts"):
        jobtable.Kind("k", int, int, max_attempts=0)
    with pytest.raises(TypeError, match="retry"):
        jobtable.Kind("k", int, int, retry=5)  # type: ignore[arg-type]


def test_options_are_stored_and_an_enqueue_overrides_the_kinds(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    report = jobtable.Kind(
        "report", int, int, max_attempts=3, priority=5, queue="reports", timeout=2.5
    )
    default = timed_store.inspect(report.enqueue(timed_store, 1))
    assert (default.queue, default.priority, default.max_attempts, default.timeout) == (
        "reports",
        5,
        3,
        2.5,
    )
    assert default.run_at == default.created_at == T0
    [a, b] = report.enqueue_many(
        timed_store, [2, 3], priority=-1, queue="urgent", delay=datetime.timedelta(minutes=5)
    )
    for job_id in (a, b):
        record = timed_store.inspect(job_id)
        assert (record.queue, record.priority, record.max_attempts) == ("urgent", -1, 3)
        assert record.run_at == T0 + datetime.timedelta(minutes=5)
    at = T0 + datetime.timedelta(days=1)
    assert timed_store.inspect(report.enqueue(timed_store, 4, run_at=at)).run_at == at


async def test_ready_jobs_run_lowest_priority_first_and_in_enqueue_order_within_one(
    store: jobtable.Store,
) -> None:
    runner = runner_of(store)
    ids = {}
    for n, priority in [(1, 5), (2, 0), (3, 5), (4, -2), (5, 0)]:
        ids[ping.enqueue(store, n, priority=priority)] = n
    order = [ids[job_id] for job_id in [await runner.run_next() for _ in range(5)] if job_id]
    assert order == [4, 2, 5, 1, 3]


async def test_a_scheduled_job_is_not_claimed_before_its_run_at(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    runner = runner_of(timed_store)
    later = ping.enqueue(timed_store, 1, delay=datetime.timedelta(minutes=10))
    now = ping.enqueue(timed_store, 2)
    assert await runner.run_next() == now
    assert await runner.run_next() is None
    clock.advance(minutes=9, seconds=59)
    assert await runner.run_next() is None
    clock.advance(seconds=1)
    assert await runner.run_next() == later


async def test_an_error_while_attempts_remain_requeues_after_the_backoff(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    flaky = jobtable.Kind(
        "flaky", int, int, max_attempts=3, retry=lambda attempt: datetime.timedelta(minutes=attempt)
    )
    runner = jobtable.Runner(timed_store, workers=1)
    calls: list[int] = []

    @runner.handler(flaky)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        calls.append(ctx.attempt)
        raise RuntimeError("token=hunter2")

    job_id = flaky.enqueue(timed_store, 1)
    assert await runner.run_next() == job_id
    record = timed_store.inspect(job_id)
    assert (record.status, record.attempt, record.error) == (jobtable.Status.QUEUED, 1, None)
    assert record.run_at == T0 + datetime.timedelta(minutes=1)
    assert record.errors == [
        jobtable.AttemptError(attempt=1, error=jobtable.MESSAGE_INTERNAL, at=T0)
    ]
    assert await runner.run_next() is None
    clock.advance(minutes=1)
    assert await runner.run_next() == job_id
    clock.advance(minutes=2)
    assert await runner.run_next() == job_id
    clock.advance(hours=1)
    assert await runner.run_next() is None
    record = timed_store.inspect(job_id)
    assert (record.status, record.attempt, record.error) == (
        jobtable.Status.FAILED,
        3,
        jobtable.MESSAGE_INTERNAL,
    )
    assert [e.attempt for e in record.errors] == [1, 2, 3]
    assert calls == [1, 2, 3]
    assert "hunter2" not in record.model_dump_json()


async def test_the_default_backoff_waits_longer_after_each_attempt_up_to_its_cap() -> None:
    backoff = jobtable.ExponentialBackoff(
        first=datetime.timedelta(seconds=1), cap=datetime.timedelta(seconds=60), jitter=0.1
    )
    for attempt, base in [(1, 1), (2, 2), (3, 4), (7, 60), (1000, 60)]:
        wait = backoff(attempt).total_seconds()
        assert base * 0.9 <= wait <= base * 1.1


async def test_failure_is_final_even_with_attempts_left(store: jobtable.Store) -> None:
    final = jobtable.Kind("final", int, int, max_attempts=5)
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(final)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Failure("No such photo.")

    job_id = final.enqueue(store, 1)
    assert await runner.run_next() == job_id
    assert await runner.run_next() is None
    record = store.inspect(job_id)
    assert (record.status, record.error, record.attempt) == (
        jobtable.Status.FAILED,
        "No such photo.",
        1,
    )


async def test_retry_asks_for_a_later_attempt_without_using_up_attempts(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    snoozy = jobtable.Kind("snoozy", int, int)
    runner = jobtable.Runner(timed_store, workers=1)

    @runner.handler(snoozy)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        if ctx.attempt < 3:
            raise jobtable.Retry(after=datetime.timedelta(seconds=30))
        return ctx.attempt

    job_id = snoozy.enqueue(timed_store, 1)
    for _ in range(2):
        assert await runner.run_next() == job_id
        record = timed_store.inspect(job_id)
        assert record.status is jobtable.Status.QUEUED
        assert record.run_at == clock() + datetime.timedelta(seconds=30)
        assert await runner.run_next() is None
        clock.advance(seconds=30)
    assert await runner.run_next() == job_id
    record = timed_store.inspect(job_id)
    assert (record.status, record.result, record.attempt, record.max_attempts) == (
        jobtable.Status.SUCCEEDED,
        3,
        3,
        3,
    )
    assert record.errors == []


async def test_a_job_with_no_handler_is_retried_while_attempts_remain(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    # The worker has no handler, so it knows nothing of the kind's backoff:
    # the default one decides (1 s after the first attempt, ±10 %).
    other = jobtable.Kind("other", int, int, max_attempts=2)
    runner = runner_of(timed_store)
    job_id = other.enqueue(timed_store, 1)
    assert await runner.run_next() == job_id
    assert timed_store.inspect(job_id).status is jobtable.Status.QUEUED
    clock.advance(seconds=1.2)
    assert await runner.run_next() == job_id
    record = timed_store.inspect(job_id)
    assert (record.status, record.error) == (
        jobtable.Status.FAILED,
        "no handler for job kind other",
    )
    assert [e.error for e in record.errors] == ["no handler for job kind other"] * 2


async def test_an_interrupted_job_is_retried_while_attempts_remain(store: jobtable.Store) -> None:
    twice = jobtable.Kind("twice", int, int, max_attempts=2)
    once = jobtable.Kind("once", int, int)
    retried, failed = twice.enqueue(store, 1), once.enqueue(store, 2)
    crashed = jobtable.Runner(store, workers=1, name="w")
    for _ in range(2):
        await crashed._producers[0].claim(1)  # claimed, then the process died
    restarted = jobtable.Runner(store, workers=1, name="w")
    for kind in (twice, once):

        @restarted.handler(kind)
        async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
            return payload

    await restarted._maintenance.begin()
    assert store.inspect(retried).status is jobtable.Status.QUEUED
    assert store.inspect(retried).errors[0].error == jobtable.MESSAGE_INTERRUPTED
    assert store.get(failed).error == jobtable.MESSAGE_INTERRUPTED
    assert await restarted.run_next() == retried
    assert store.get(retried).result == 1


def test_created_at_is_the_enqueue_time_whether_run_at_is_now_later_or_given(
    timed_store: jobtable.Store,
) -> None:
    later = jobtable.Kind("later", int, int, delay=datetime.timedelta(minutes=1))
    now = timed_store.inspect(ping.enqueue(timed_store, 1))
    delayed = timed_store.inspect(later.enqueue(timed_store, 2))
    at = T0 + datetime.timedelta(days=2)
    given = timed_store.inspect(later.enqueue(timed_store, 3, run_at=at))
    assert (now.run_at, delayed.run_at, given.run_at) == (
        T0,
        T0 + datetime.timedelta(minutes=1),
        at,
    )
    assert now.created_at == delayed.created_at == given.created_at == T0


def test_an_enqueues_overrides_apply_each_time_and_only_to_it(
    timed_store: jobtable.Store,
) -> None:
    report = jobtable.Kind("report", int, int, priority=5, queue="reports")

    def options(job_id: str) -> tuple[str, int]:
        record = timed_store.inspect(job_id)
        return record.queue, record.priority

    # The second enqueue of the same overrides reuses the first's checked options.
    assert options(report.enqueue(timed_store, 1, priority=1)) == ("reports", 1)
    assert options(report.enqueue(timed_store, 2, priority=1)) == ("reports", 1)
    assert options(report.enqueue(timed_store, 3, priority=2)) == ("reports", 2)
    assert options(report.enqueue(timed_store, 4, queue="urgent")) == ("urgent", 5)
    assert options(report.enqueue(timed_store, 5)) == ("reports", 5)
    with pytest.raises(TypeError, match="priority"):
        report.enqueue(timed_store, 6, priority=True)  # equal to 1, which was accepted
    report.options = dataclasses.replace(report.options, queue="moved")
    assert options(report.enqueue(timed_store, 7, priority=1)) == ("moved", 1)
    assert options(report.enqueue(timed_store, 8)) == ("moved", 5)


OVERRIDES: dict[str, Any] = {
    "max_attempts": 4,
    "priority": -3,
    "queue": "other",
    "timeout": 1.5,
    "delay": datetime.timedelta(seconds=9),
}


def test_merged_applies_each_option_given_and_keeps_the_others() -> None:
    base = Options(max_attempts=2, priority=1, queue="q", timeout=3.0, delay=None)
    assert {field.name for field in dataclasses.fields(Options)} == OVERRIDES.keys()
    for name, value in OVERRIDES.items():
        assert base.merged("k", {name: value}) == dataclasses.replace(base, **{name: value})
    assert base.merged("k", OVERRIDES) == Options(**OVERRIDES)


def test_merges_reuse_a_checked_merge_only_for_the_same_values_of_the_same_types() -> None:
    merges, base = Merges(size=2), Options()
    first = merges.merged("k", base, {"priority": 1})
    assert merges.merged("k", base, {"priority": 1}) is first
    assert merges.merged("k", base, {"priority": 2}).priority == 2
    for refused in ({"priority": True}, {"priority": 1.0}, {"max_attempts": True}):
        with pytest.raises(TypeError):
            merges.merged("k", base, refused)
    other = Options(queue="other")
    assert merges.merged("k", other, {"priority": 1}) == Options(queue="other", priority=1)
    # Past its size it still merges, without remembering.
    third = merges.merged("k", base, {"priority": 3})
    assert third.priority == 3
    assert merges.merged("k", base, {"priority": 3}) is not third
    assert merges.merged("k", base, {"timeout": 2}).timeout == 2
    with pytest.raises(ValueError, match="queue"):
        merges.merged("k", base, {"queue": ["not", "a", "str"]})
