"""Periodic jobs: each tick enqueued once, however many runners declare it, DST included.

Time is the store's clock, which each test moves by hand: the scheduler's
``enqueue_due`` is called after each move, as its loop would at each wake,
so no test waits for a real tick. Tests run on both engines.
"""

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable, Iterator

import pytest
from handled import handled

import jobtable
from jobtable.testing import FrozenClock

UTC = datetime.UTC
WaitUntil = Callable[..., Awaitable[None]]
report = jobtable.Kind("report", str, str)


class Clock:
    """A clock that stands still until a test moves it."""

    def __init__(self, now: datetime.datetime) -> None:
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(year, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(utc(2026, 12, 3, 12, 2))


@pytest.fixture
def stores(store_target: str, clock: Clock) -> Iterator[Callable[[], jobtable.Store]]:
    """Opens stores on the test's database whose clock is the test's; closes them after."""
    opened: list[jobtable.Store] = []

    def open_one() -> jobtable.Store:
        opened.append(jobtable.Store.open(store_target, clock=clock))
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


def ticks(store: jobtable.Store) -> list[datetime.datetime]:
    """The ticks of the report jobs stored, oldest first: each job's run_at is its tick."""
    return sorted(r.run_at for r in store.list_jobs(kind="report", limit=1000))


async def walk(
    runner: jobtable.Runner,
    clock: Clock,
    until: datetime.datetime,
    step: datetime.timedelta = datetime.timedelta(minutes=1),
) -> None:
    """Moves the clock by step up to until, letting the scheduler enqueue at each step."""
    while clock.now < until:
        clock.now = min(clock.now + step, until)
        await runner._periodic.enqueue_due()


async def test_every_enqueues_each_tick_once_and_a_long_gap_only_its_latest(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    store = stores()
    runner = jobtable.Runner(store)
    runner.periodic(report, every=datetime.timedelta(minutes=5), payload="r")
    runner._periodic.begin()
    # Started at 12:02: the tick of 12:00 was missed, and runs once now.
    await runner._periodic.enqueue_due()
    assert ticks(store) == [utc(2026, 12, 3, 12, 0)]
    await walk(runner, clock, utc(2026, 12, 3, 12, 11))
    assert ticks(store)[1:] == [utc(2026, 12, 3, 12, 5), utc(2026, 12, 3, 12, 10)]
    # The process was suspended for an hour: one job for the latest tick, not twelve.
    clock.now = utc(2026, 12, 3, 13, 17)
    await runner._periodic.enqueue_due()
    assert ticks(store)[3:] == [utc(2026, 12, 3, 13, 15)]
    assert runner._periodic.next_tick() == utc(2026, 12, 3, 13, 20)
    [record] = store.list_jobs(kind="report", limit=1)
    assert (record.payload, record.status) == ("r", jobtable.Status.QUEUED)


async def test_missed_skip_waits_for_the_next_tick(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    store = stores()
    runner = jobtable.Runner(store)
    runner.periodic(report, every=datetime.timedelta(minutes=5), payload="r", missed="skip")
    runner._periodic.begin()
    await runner._periodic.enqueue_due()
    assert ticks(store) == []
    await walk(runner, clock, utc(2026, 12, 3, 12, 5))
    assert ticks(store) == [utc(2026, 12, 3, 12, 5)]


async def test_a_missed_tick_older_than_the_retention_is_not_caught_up(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    store = stores()
    runner = jobtable.Runner(store, retention=datetime.timedelta(hours=1))
    runner.periodic(report, cron="0 7 * * *", payload="r")  # 7:00 UTC, five hours ago
    runner._periodic.begin()
    await runner._periodic.enqueue_due()
    assert ticks(store) == []


async def test_many_runners_declaring_one_schedule_enqueue_each_tick_once(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    runners = [jobtable.Runner(stores(), name=f"r{n}") for n in range(5)]
    for runner in runners:
        runner.periodic(report, cron="*/10 * * * *", payload="r")
        runner._periodic.begin()
    for minute in (2, 10, 20):
        clock.now = utc(2026, 12, 3, 12, minute)
        # All at once: on PostgreSQL each enqueue runs on a connection of its own.
        done = await asyncio.gather(*(runner._periodic.enqueue_due() for runner in runners))
        results = [r for each in done for r in each]
        assert len({r.id for r in results}) == 1
        assert sorted(r.duplicate for r in results) == [False, True, True, True, True]
    store = runners[0].store
    assert ticks(store) == [
        utc(2026, 12, 3, 12, 0),
        utc(2026, 12, 3, 12, 10),
        utc(2026, 12, 3, 12, 20),
    ]
    # The tick's job ran; a runner that starts afterwards does not enqueue it again.
    worker = jobtable.Runner(store, name="worker")
    worker.handler(report)(lambda ctx, payload: payload)
    while await worker.run_next() is not None:
        pass
    late = jobtable.Runner(stores(), name="late")
    late.periodic(report, cron="*/10 * * * *", payload="r")
    late._periodic.begin()
    [result] = await late._periodic.enqueue_due()
    assert result.duplicate
    assert len(ticks(store)) == 3


async def test_different_payloads_or_names_are_different_schedules(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    store = stores()
    runner = jobtable.Runner(store)
    every = datetime.timedelta(minutes=5)
    runner.periodic(report, every=every, payload="team a")
    runner.periodic(report, every=every, payload="team b")
    runner.periodic(report, every=every, payload="team a", name="again")
    with pytest.raises(ValueError, match="'again' is already declared"):
        runner.periodic(report, every=every, payload="team c", name="again")
    runner._periodic.begin()
    await runner._periodic.enqueue_due()
    payloads = sorted(str(r.payload) for r in store.list_jobs(kind="report"))
    assert payloads == ["team a", "team a", "team b"]


async def test_a_weekday_cron_runs_at_seven_in_berlin_winter_and_summer(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    store = stores()
    runner = jobtable.Runner(store)
    runner.periodic(report, cron="0 7 * * 1-5", payload="r", timezone="Europe/Berlin")
    clock.now = utc(2026, 3, 26, 12)  # a Thursday
    runner._periodic.begin()
    await walk(runner, clock, utc(2026, 3, 31, 12), datetime.timedelta(minutes=15))
    assert ticks(store) == [
        utc(2026, 3, 26, 6),  # caught up at start: Thursday 7:00 CET
        utc(2026, 3, 27, 6),  # Friday 7:00 CET
        utc(2026, 3, 30, 5),  # Monday 7:00 CEST, after the spring-forward Sunday
        utc(2026, 3, 31, 5),
    ]


async def test_spring_forward_runs_a_skipped_time_once_just_after_the_gap(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    # Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist.
    store = stores()
    runner = jobtable.Runner(store)
    runner.periodic(report, cron="30 2 * * *", payload="daily", timezone="Europe/Berlin")
    runner.periodic(report, cron="*/30 * * * *", payload="half", timezone="Europe/Berlin")
    clock.now = utc(2026, 3, 28, 23, 50)  # 00:50 CET
    runner._periodic.begin()
    await walk(runner, clock, utc(2026, 3, 30, 1))
    daily = [r.run_at for r in store.list_jobs(kind="report", limit=1000) if r.payload == "daily"]
    half = sorted(
        r.run_at for r in store.list_jobs(kind="report", limit=1000) if r.payload == "half"
    )
    assert sorted(daily) == [
        utc(2026, 3, 28, 1, 30),  # caught up at start: Saturday 02:30 CET
        utc(2026, 3, 29, 1, 0),  # Sunday: 03:00 CEST, the first moment after the gap
        utc(2026, 3, 30, 0, 30),  # Monday 02:30 CEST
    ]
    # Every half hour that exists, once: 01:00, 01:30 CET, then 03:00 CEST.
    assert [t for t in half if utc(2026, 3, 29, 0) <= t <= utc(2026, 3, 29, 1, 30)] == [
        utc(2026, 3, 29, 0, 0),
        utc(2026, 3, 29, 0, 30),
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 1, 30),
    ]
    assert len(half) == len(set(half))


async def test_fall_back_runs_a_repeated_time_once_and_hourly_every_real_hour(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    # Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET, so 02:30 occurs twice.
    store = stores()
    runner = jobtable.Runner(store)
    runner.periodic(report, cron="30 2 * * *", payload="daily", timezone="Europe/Berlin")
    runner.periodic(report, cron="0 * * * *", payload="hourly", timezone="Europe/Berlin")
    clock.now = utc(2026, 10, 24, 22, 30)  # 00:30 CEST
    runner._periodic.begin()
    await walk(runner, clock, utc(2026, 10, 25, 3, 30))
    records = store.list_jobs(kind="report", limit=1000)
    daily = sorted(r.run_at for r in records if r.payload == "daily")
    hourly = sorted(r.run_at for r in records if r.payload == "hourly")
    assert daily == [
        utc(2026, 10, 24, 0, 30),  # caught up at start: Saturday 02:30 CEST
        utc(2026, 10, 25, 0, 30),  # Sunday: the first 02:30 (CEST) only
    ]
    # 00:00 (caught up), 01:00 and 02:00 CEST, then 02:00 again, 03:00 and
    # 04:00 CET: every real hour once, the repeated one too.
    assert hourly == [utc(2026, 10, 24, 22), utc(2026, 10, 24, 23)] + [
        utc(2026, 10, 25, h) for h in range(4)
    ]


async def test_new_york_spring_forward_and_fall_back(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    # New York: 2026-03-08 02:00 EST jumps to 03:00 EDT (02:30 does not
    # exist); 2026-11-01 02:00 EDT falls back to 01:00 EST (01:30 occurs twice).
    store = stores()
    runner = jobtable.Runner(store)
    zone = "America/New_York"
    runner.periodic(report, cron="30 2 * * *", payload="spring", timezone=zone, missed="skip")
    runner.periodic(report, cron="30 1 * * *", payload="fall", timezone=zone, missed="skip")
    clock.now = utc(2026, 3, 8, 5)  # 00:00 EST on the spring-forward day
    runner._periodic.begin()
    await walk(runner, clock, utc(2026, 3, 9, 12), datetime.timedelta(minutes=10))
    clock.now = utc(2026, 11, 1, 4)  # 00:00 EDT on the fall-back day
    await runner._periodic.enqueue_due()  # the latest ticks, missed while the clock jumped
    await walk(runner, clock, utc(2026, 11, 2, 4), datetime.timedelta(minutes=10))
    records = store.list_jobs(kind="report", limit=1000)
    assert sorted(r.run_at for r in records if r.payload == "spring") == [
        utc(2026, 3, 8, 7, 0),  # 03:00 EDT, just after the gap
        utc(2026, 3, 9, 6, 30),  # 02:30 EDT
        utc(2026, 10, 31, 6, 30),  # 02:30 EDT, caught up after the jump
        utc(2026, 11, 1, 7, 30),  # 02:30 EST: it occurs once
    ]
    assert sorted(r.run_at for r in records if r.payload == "fall") == [
        utc(2026, 3, 8, 6, 30),  # 01:30 EST
        utc(2026, 3, 9, 5, 30),  # 01:30 EDT
        utc(2026, 10, 31, 5, 30),  # 01:30 EDT, caught up after the jump
        utc(2026, 11, 1, 5, 30),  # the first 01:30 (EDT) only, not the second (EST)
    ]


async def test_cron_nicknames_tick_as_their_five_fields(
    stores: Callable[[], jobtable.Store], clock: Clock
) -> None:
    runner = jobtable.Runner(stores())
    runner.periodic(report, cron="@daily", payload="daily", missed="skip")
    runner.periodic(report, cron="@HOURLY", payload="hourly", missed="skip")
    runner._periodic.begin()
    await walk(runner, clock, utc(2026, 12, 5, 0, 30), datetime.timedelta(minutes=30))
    records = runner.store.list_jobs(kind="report", limit=1000)
    daily = sorted(r.run_at for r in records if r.payload == "daily")
    assert daily == [utc(2026, 12, 4), utc(2026, 12, 5)]
    hourly = [r for r in records if r.payload == "hourly"]
    assert len(hourly) == 36  # 13:00 on the 3rd to 00:00 on the 5th


@pytest.mark.parametrize(
    ("schedule", "error", "message"),
    [
        ({}, ValueError, "cron or every"),
        ({"cron": "* * * * *", "every": datetime.timedelta(1)}, ValueError, "cron or every"),
        ({"cron": "61 * * * *"}, ValueError, "bad cron expression '61 \\* \\* \\* \\*'"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, ValueError, "Mars/Olympus"),
        ({"every": datetime.timedelta(1), "timezone": "Mars/Olympus"}, ValueError, "Mars/Olympus"),
        ({"cron": "@fortnightly"}, ValueError, "bad cron expression '@fortnightly'"),
        ({"every": datetime.timedelta(0)}, ValueError, "every"),
        ({"every": 60}, ValueError, "every"),
        ({"every": datetime.timedelta(1), "missed": "all"}, ValueError, "missed"),
        ({"every": datetime.timedelta(1), "name": ""}, ValueError, "name"),
        ({"every": datetime.timedelta(1), "payload": 3}, jobtable.PayloadError, "report"),
    ],
)
def test_a_bad_schedule_is_refused_naming_what_is_wrong(
    store: jobtable.Store, schedule: dict[str, object], error: type[Exception], message: str
) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(error, match=message):
        runner.periodic(report, **{"payload": "r", **schedule})  # type: ignore[arg-type, misc]


async def test_a_started_runner_enqueues_its_ticks_and_runs_them_like_any_job(
    stores: Callable[[], jobtable.Store], clock: Clock, wait_until: WaitUntil
) -> None:
    store = stores()
    runner = jobtable.Runner(store, workers=1)
    runner.periodic(report, every=datetime.timedelta(hours=1), payload="hourly")

    @runner.handler(report)
    async def make(ctx: jobtable.JobContext[str], payload: str) -> str:
        return f"made {payload}"

    await runner.start()
    try:
        with pytest.raises(jobtable.RunnerError, match="before start"):
            runner.periodic(report, every=datetime.timedelta(hours=2), payload="late")
        # The tick of 12:00 was missed by two minutes: caught up at start, and run.
        await wait_until(
            lambda: (
                [r.result for r in store.list_jobs(kind="report", status="succeeded")]
                == ["made hourly"]
            )
        )
    finally:
        runner.stop()
        await runner.wait()
    [record] = store.list_jobs(kind="report")
    assert record.run_at == utc(2026, 12, 3, 12)


async def test_a_periodic_kind_without_a_handler_on_a_runner_of_its_queue_is_warned_of(
    stores: Callable[[], jobtable.Store], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="jobtable")
    elsewhere = jobtable.Kind("elsewhere", str, str, queue="other")
    store = stores()
    runner = handled(jobtable.Runner(store, workers=1))
    runner.periodic(report, every=datetime.timedelta(days=1), payload="r", missed="skip")
    runner.periodic(elsewhere, every=datetime.timedelta(days=1), payload="e", missed="skip")
    with_handler = jobtable.Runner(store, workers=1, name="handled")
    with_handler.periodic(report, every=datetime.timedelta(days=1), payload="r", missed="skip")
    with_handler.handler(report)(make_report)
    for started in (runner, with_handler):
        await started.start()
        started.stop()
        await started.wait()
    warned = [r for r in caplog.records if "no handler" in r.getMessage()]
    # Only the report schedule of the runner without its handler: the other
    # kind's queue is not this runner's, and the second runner has a handler.
    assert [(r.kind, r.levelno) for r in warned] == [("report", logging.WARNING)]  # type: ignore[attr-defined]


async def make_report(ctx: jobtable.JobContext[str], payload: str) -> str:
    return payload


async def test_a_started_runner_notices_a_frozen_clock_moved_on_within_a_second_or_so(
    store_target: str, wait_until: WaitUntil
) -> None:
    clock = FrozenClock(utc(2026, 12, 3, 12, 2))
    with jobtable.Store.open(store_target, clock=clock) as store:
        runner = jobtable.Runner(store, workers=1)
        runner.periodic(report, every=datetime.timedelta(hours=1), payload="h", missed="skip")
        runner.handler(report)(make_report)
        await runner.start()
        try:
            await asyncio.sleep(0.5)  # the scheduler now sleeps towards 13:00, 58 minutes away
            clock.set(utc(2026, 12, 3, 13))
            # Before, it slept up to a minute between looks at the clock.
            await wait_until(lambda: ticks(store) == [utc(2026, 12, 3, 13)], limit=20.0)
        finally:
            runner.stop()
            await runner.wait()
