"""The Store's operations for operators: retry, delete, bulk retry, prune, runners, stats.

Each test runs on every engine (``store``); jobs reach their states through
a real runner's ``run_next`` or a claim on the seam, never by writing rows.
"""

import asyncio
import datetime

import pytest
from seam import claim, engine_of

import jobtable

job = jobtable.Kind("op", int, int, max_attempts=2)
other = jobtable.Kind("other-op", int, int, queue="side")


def make_runner(store: jobtable.Store, name: str = "ops") -> jobtable.Runner:
    """A runner whose handlers fail on a negative payload and succeed otherwise."""
    runner = jobtable.Runner(store, name=name, queues={"default": 1, "side": 1})

    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        if payload < 0:
            raise jobtable.Failure(f"negative: {payload}")
        return payload

    runner.handler(job)(handle)
    runner.handler(other)(handle)
    return runner


def run_all(runner: jobtable.Runner) -> None:
    async def drain() -> None:
        while await runner.run_next() is not None:
            pass

    asyncio.run(drain())


def test_retry_queues_a_failed_job_again_with_fresh_attempts_and_keeps_its_history(
    store: jobtable.Store,
) -> None:
    job_id = job.enqueue(store, -1, max_attempts=1)
    runner = make_runner(store)
    run_all(runner)
    assert store.inspect(job_id).status == jobtable.Status.FAILED

    assert store.retry(job_id) == jobtable.RetryResult.RETRIED

    record = store.inspect(job_id)
    assert (record.status, record.error, record.result) == (jobtable.Status.QUEUED, None, None)
    assert (record.attempt, record.max_attempts) == (1, 2)
    assert [e.error for e in record.errors] == ["negative: -1"]
    run_all(runner)
    again = store.inspect(job_id)
    assert again.status == jobtable.Status.FAILED
    history = [(e.attempt, e.error) for e in again.errors]
    assert history == [(1, "negative: -1"), (2, "negative: -1")]


def test_retry_queues_a_cancelled_job_again(store: jobtable.Store) -> None:
    job_id = job.enqueue(store, 3)
    assert store.cancel(job_id) == jobtable.CancelResult.CANCELLED
    assert store.retry(job_id) == jobtable.RetryResult.RETRIED
    run_all(make_runner(store))
    assert store.get(job_id).result == 3


def test_retry_of_a_queued_running_or_succeeded_job_says_so_and_changes_nothing(
    store: jobtable.Store,
) -> None:
    done = job.enqueue(store, 1)
    run_all(make_runner(store))
    running = job.enqueue(store, 2)
    assert claim(engine_of(store), 1) == [running]
    queued = job.enqueue(store, 3)
    before = [store.inspect(i) for i in (done, running, queued)]

    assert store.retry(done) == jobtable.RetryResult.SUCCEEDED
    assert store.retry(running) == jobtable.RetryResult.RUNNING
    assert asyncio.run(store.aretry(queued)) == jobtable.RetryResult.QUEUED
    assert [store.inspect(i) for i in (done, running, queued)] == before


@pytest.mark.parametrize("job_id", ["nope", "bad\x00id", "\udc80"])
def test_retry_and_delete_of_an_unknown_id_raise_job_not_found(
    store: jobtable.Store, job_id: str
) -> None:
    with pytest.raises(jobtable.JobNotFound):
        store.retry(job_id)
    with pytest.raises(jobtable.JobNotFound):
        store.delete(job_id)


def test_delete_removes_a_job_that_is_not_running_and_keeps_a_running_one(
    store: jobtable.Store,
) -> None:
    queued = job.enqueue(store, 1)
    running = job.enqueue(store, 2)
    assert claim(engine_of(store), 1) == [queued]
    assert store.delete(running) == jobtable.DeleteResult.DELETED
    assert store.delete(queued) == jobtable.DeleteResult.RUNNING
    assert store.inspect(queued).status == jobtable.Status.RUNNING
    with pytest.raises(jobtable.JobNotFound):
        store.inspect(running)
    assert asyncio.run(store.adelete(queued)) == jobtable.DeleteResult.RUNNING


def test_retry_failed_retries_only_the_failed_jobs_matching_the_filters(
    store: jobtable.Store,
) -> None:
    failed = job.enqueue_many(store, [-1, -2], max_attempts=1)
    side_failed = other.enqueue(store, -3)
    ok = job.enqueue(store, 4)
    run_all(make_runner(store))

    assert store.retry_failed(queue="side", kind="op") == 0
    assert store.retry_failed(kind="op") == 2
    assert {store.inspect(i).status for i in failed} == {jobtable.Status.QUEUED}
    assert store.inspect(side_failed).status == jobtable.Status.FAILED
    assert store.inspect(ok).status == jobtable.Status.SUCCEEDED
    assert asyncio.run(store.aretry_failed(queue="side")) == 1
    assert store.retry_failed() == 0


@pytest.mark.parametrize("bad", ["a\x00b", "\udc80"])
def test_retry_failed_refuses_a_filter_that_cannot_be_stored(
    store: jobtable.Store, bad: str
) -> None:
    with pytest.raises(ValueError, match="kind filter"):
        store.retry_failed(kind=bad)


def test_prune_deletes_only_the_jobs_finished_longer_ago_than_older_than(
    store: jobtable.Store,
) -> None:
    finished = job.enqueue_many(store, [1, 2])
    run_all(make_runner(store))
    queued = job.enqueue(store, 3)

    assert store.prune(datetime.timedelta(days=1)) == 0
    assert asyncio.run(store.aprune(datetime.timedelta(0))) == 2
    for job_id in finished:
        with pytest.raises(jobtable.JobNotFound):
            store.get(job_id)
    assert store.get(queued).status == jobtable.Status.QUEUED
    with pytest.raises(ValueError, match="older_than"):
        store.prune(datetime.timedelta(seconds=-1))


async def test_runners_lists_each_runner_alive_with_the_jobs_it_holds(
    store: jobtable.Store,
) -> None:
    entered = asyncio.Event()
    release = asyncio.Event()
    runner = jobtable.Runner(store, name="holder", queues={"bulk": 1})
    slow = jobtable.Kind("slow-op", int, int, queue="bulk")

    @runner.handler(slow)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        entered.set()
        await release.wait()
        return payload

    job_id = slow.enqueue(store, 1)
    await runner.start()
    try:
        await asyncio.wait_for(entered.wait(), 20)
        [info] = await store.arunners()
        assert (info.name, info.alive, info.jobs) == ("holder", True, [job_id])
        assert info.queues == ["bulk"]  # the held jobs' queues: what it serves is not recorded
        assert info.started_at <= info.heartbeat_at
        [stale] = store.runners(lease=1e-6)
        assert (stale.name, stale.alive) == ("holder", False)
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    assert store.runners() == []


def test_prune_older_than_the_calendar_deletes_nothing(store: jobtable.Store) -> None:
    assert store.prune(datetime.timedelta.max) == 0


def test_list_jobs_before_past_either_end_of_a_seq_is_every_job_or_none(
    store: jobtable.Store,
) -> None:
    job_id = job.enqueue(store, 1)
    assert [r.id for r in store.list_jobs(before=1 << 70)] == [job_id]
    assert store.list_jobs(before=-(1 << 70)) == []
    with pytest.raises(ValueError, match=r"status must be one of queued, .*, got 'bogus'"):
        store.list_jobs(status="bogus")


def test_runners_refuses_a_lease_that_is_not_positive(store: jobtable.Store) -> None:
    with pytest.raises(ValueError, match="lease"):
        store.runners(lease=0)


def test_stats_counts_each_queue_by_status_with_its_oldest_due_jobs_age(
    store: jobtable.Store,
) -> None:
    now = store.clock()
    job.enqueue(store, -1, max_attempts=1, run_at=now - datetime.timedelta(minutes=9))
    waited = job.enqueue(store, 1, run_at=now - datetime.timedelta(minutes=5))
    job.enqueue(store, 2)
    other.enqueue(store, 3, run_at=now + datetime.timedelta(hours=1))
    runner = make_runner(store)
    asyncio.run(runner.run_next())  # the first enqueued, which fails

    stats = store.stats()
    by_queue = {q.queue: q for q in stats.queues}
    assert set(by_queue) == {"default", "side"}
    assert by_queue["default"].counts == {jobtable.Status.QUEUED: 2, jobtable.Status.FAILED: 1}
    age = by_queue["default"].oldest_queued_age
    assert age is not None
    assert (
        datetime.timedelta(minutes=5)
        <= age
        < datetime.timedelta(minutes=5) + (stats.at - now) + datetime.timedelta(seconds=1)
    )
    assert by_queue["default"].scheduled == 0
    # Scheduled for later only: none is due, so none has an age, and the count says why.
    assert (by_queue["side"].oldest_queued_age, by_queue["side"].scheduled) == (None, 1)
    assert store.inspect(waited).status == jobtable.Status.QUEUED
    assert {q.queue: q.counts for q in asyncio.run(store.astats()).queues} == store.counts()


def test_stats_of_a_queue_with_nothing_queued_has_no_age(store: jobtable.Store) -> None:
    job.enqueue(store, 1)
    run_all(make_runner(store))
    [queue] = store.stats().queues
    assert (queue.counts, queue.oldest_queued_age) == ({jobtable.Status.SUCCEEDED: 1}, None)
    assert queue.scheduled == 0


def test_stats_ages_only_the_due_jobs_of_a_queue_that_also_has_later_ones(
    store: jobtable.Store,
) -> None:
    now = store.clock()
    job.enqueue(store, 1, run_at=now - datetime.timedelta(minutes=3))
    job.enqueue(store, 2, run_at=now - datetime.timedelta(hours=2) + datetime.timedelta(days=1))
    job.enqueue(store, 3, run_at=now + datetime.timedelta(days=2))
    [queue] = store.stats().queues
    assert queue.counts == {jobtable.Status.QUEUED: 3}
    assert queue.scheduled == 2
    assert queue.oldest_queued_age is not None
    assert datetime.timedelta(minutes=3) <= queue.oldest_queued_age < datetime.timedelta(hours=1)


def test_throughput_counts_the_jobs_finished_per_minute_and_status(
    store: jobtable.Store,
) -> None:
    job.enqueue_many(store, [1, 2, -1], max_attempts=1)
    cancelled = job.enqueue(store, 4)
    store.cancel(cancelled)
    run_all(make_runner(store))
    job.enqueue(store, 5)

    points = store.throughput()
    totals: dict[jobtable.Status, int] = {}
    for point in points:
        assert point.minute.second == point.minute.microsecond == 0
        assert point.minute.utcoffset() == datetime.timedelta(0)
        totals[point.status] = totals.get(point.status, 0) + point.jobs
    assert totals == {
        jobtable.Status.SUCCEEDED: 2,
        jobtable.Status.FAILED: 1,
        jobtable.Status.CANCELLED: 1,
    }
    assert points == sorted(points, key=lambda p: (p.minute, p.status))
    assert asyncio.run(store.athroughput()) == points


def test_throughput_refuses_a_window_out_of_range(store: jobtable.Store) -> None:
    for window in (datetime.timedelta(0), datetime.timedelta(days=8)):
        with pytest.raises(ValueError, match="window"):
            store.throughput(window)


def test_retry_leaves_a_unique_job_whose_key_another_job_holds(store: jobtable.Store) -> None:
    unique = jobtable.Kind("unique-op", int, int, unique=jobtable.Unique(key="same"))
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(unique)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Failure("no")

    first = unique.enqueue(store, 1)
    asyncio.run(runner.run_next())
    second = unique.enqueue(store, 2)
    asyncio.run(runner.run_next())
    holder = unique.enqueue(store, 3)
    assert store.retry(first) == jobtable.RetryResult.KEY_HELD
    assert store.retry_failed() == 0
    assert store.inspect(first).status == jobtable.Status.FAILED
    store.delete(holder)
    # Two failed jobs share the key: only the newest is queued again.
    assert store.retry_failed() == 1
    assert (store.inspect(first).status, store.inspect(second).status) == (
        jobtable.Status.FAILED,
        jobtable.Status.QUEUED,
    )
