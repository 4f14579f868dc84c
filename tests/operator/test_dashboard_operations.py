"""The Store's dashboard operations: names, payload search, bulk cancel and delete, figures, health.

Each test runs on every engine (``store``); jobs reach their states through
a real runner's ``run_next`` or a claim on the seam, never by writing rows.
"""

import asyncio
import datetime

import pytest
from seam import claim

import jobtable

job = jobtable.Kind("op", int, int, max_attempts=1)
other = jobtable.Kind("other-op", int, int, queue="side")
note = jobtable.Kind("note", dict, dict)


def run_all(store: jobtable.Store) -> None:
    """Runs every queued job of job and other: a negative payload fails, others succeed."""
    runner = jobtable.Runner(store, name="ops", queues={"default": 1, "side": 1})

    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        if payload < 0:
            raise jobtable.Failure(f"negative: {payload}")
        return payload

    runner.handler(job)(handle)
    runner.handler(other)(handle)

    async def drain() -> None:
        while await runner.run_next() is not None:
            pass

    asyncio.run(drain())


def test_kinds_and_queues_list_each_name_once_including_those_of_running_jobs(
    store: jobtable.Store,
) -> None:
    assert store.kinds() == []
    assert store.queue_names() == []
    running = jobtable.Kind("only-running", int, int).enqueue(store, 1)
    assert claim(store.engine, 1) == [running]
    for n in (1, -1, 2):
        job.enqueue(store, n)
    other.enqueue(store, 3)
    run_all(store)
    job.enqueue(store, 4)

    assert store.kinds() == ["only-running", "op", "other-op"]
    assert store.queue_names() == ["default", "side"]
    assert asyncio.run(store.akinds()) == store.kinds()
    assert asyncio.run(store.aqueue_names()) == store.queue_names()


def test_search_payloads_finds_a_substring_in_any_case_among_the_newest_jobs_only(
    store: jobtable.Store,
) -> None:
    old = note.enqueue(store, {"customer": "ACME Corp", "n": 0})
    newer = [note.enqueue(store, {"customer": f"other-{n}"}) for n in range(5)]
    found = note.enqueue(store, {"customer": "acme corp", "n": 9})

    hits = store.search_payloads("Acme")
    assert [r.id for r in hits] == [found, old]
    # Only the 3 newest jobs are read: the old match is beyond them.
    assert [r.id for r in store.search_payloads("acme", scan=3)] == [found]
    assert [r.id for r in store.search_payloads("other-", limit=2)] == newer[:-3:-1]
    assert asyncio.run(store.asearch_payloads("ACME", limit=1))[0].id == found
    for bad in ("", "x" * 201, "a\x00b"):
        with pytest.raises(ValueError, match="text"):
            store.search_payloads(bad)
    with pytest.raises(ValueError, match="scan"):
        store.search_payloads("a", scan=0)


def test_cancel_many_cancels_queued_jobs_requests_running_ones_and_skips_unknown_ids(
    store: jobtable.Store,
) -> None:
    first, second, done = (job.enqueue(store, n) for n in (1, 2, 3))
    [running] = claim(store.engine, 1)
    assert running == first

    results = store.cancel_many([first, second, "no-such-job", second])

    assert results == {
        first: jobtable.CancelResult.REQUESTED,
        second: jobtable.CancelResult.CANCELLED,
    }
    assert store.inspect(first).cancel_requested
    assert store.inspect(second).status == jobtable.Status.CANCELLED
    assert store.inspect(done).status == jobtable.Status.QUEUED
    with pytest.raises(TypeError):
        store.cancel_many("abc")
    with pytest.raises(ValueError, match="at most 1000"):
        store.cancel_many([str(n) for n in range(1001)])


def test_delete_many_keeps_running_jobs_and_skips_unknown_ids(store: jobtable.Store) -> None:
    first, second = job.enqueue(store, 1), job.enqueue(store, 2)
    assert claim(store.engine, 1) == [first]

    results = asyncio.run(store.adelete_many([first, second, "no-such-job"]))

    assert results == {first: jobtable.DeleteResult.RUNNING, second: jobtable.DeleteResult.DELETED}
    assert store.inspect(first).status == jobtable.Status.RUNNING
    with pytest.raises(jobtable.JobNotFound):
        store.inspect(second)


def test_cancel_matching_cancels_only_the_matching_queued_and_running_jobs(
    store: jobtable.Store,
) -> None:
    running = job.enqueue(store, 1)
    assert claim(store.engine, 1) == [running]
    queued = [job.enqueue(store, n) for n in range(3)]
    side = other.enqueue(store, 5)

    done = store.cancel_matching(kind="op")

    assert done == jobtable.BulkCancel(cancelled=3, requested=1)
    assert all(store.inspect(i).status == jobtable.Status.CANCELLED for i in queued)
    assert store.inspect(running).cancel_requested
    assert store.inspect(side).status == jobtable.Status.QUEUED
    assert store.cancel_matching(status="running", queue="side").cancelled == 0
    assert asyncio.run(store.acancel_matching(status="queued", queue="side")).cancelled == 1
    with pytest.raises(ValueError, match="status must be queued, running or None"):
        store.cancel_matching(status="failed")
    with pytest.raises(ValueError, match="kind"):
        store.cancel_matching(kind="a\x00")


def test_delete_matching_deletes_the_matching_jobs_that_are_not_running(
    store: jobtable.Store,
) -> None:
    running = job.enqueue(store, 1)
    assert claim(store.engine, 1) == [running]
    for n in (-1, -2, 3):
        job.enqueue(store, n)
    side = other.enqueue(store, -4)
    run_all(store)

    assert store.delete_matching(status="failed", kind="op") == 2
    assert sorted(r.status for r in store.list_jobs(kind="op")) == ["running", "succeeded"]
    assert store.inspect(side).status == jobtable.Status.FAILED
    assert asyncio.run(store.adelete_matching(kind="op")) == 1
    assert [r.id for r in store.list_jobs(kind="op")] == [running]
    with pytest.raises(ValueError, match="status must be one of"):
        store.delete_matching(status="gone")


def test_kind_figures_give_counts_failure_rate_and_percentiles_per_kind(
    store: jobtable.Store,
) -> None:
    for n in (1, 2, 3, -1):
        job.enqueue(store, n)
    other.enqueue(store, 7)
    run_all(store)

    report = store.kind_figures()

    assert report.complete
    assert report.read == 5
    by_kind = {k.kind: k for k in report.kinds}
    assert list(by_kind) == ["op", "other-op"]
    op = by_kind["op"]
    assert (op.finished, op.succeeded, op.failed, op.cancelled) == (4, 3, 1, 0)
    assert op.failure_rate == 0.25
    assert op.per_minute == pytest.approx(4 / 60)
    assert op.wait_p50 is not None
    assert op.wait_p95 is not None
    assert op.wait_p50 <= op.wait_p95
    assert op.run_p50 is not None
    assert op.run_p95 is not None
    assert op.run_p50 <= op.run_p95
    cut = store.kind_figures(limit=2)
    assert not cut.complete
    assert cut.read == 2
    assert asyncio.run(store.akind_figures()).read == 5
    with pytest.raises(ValueError, match="window"):
        store.kind_figures(window=datetime.timedelta(days=2))


def test_percentiles_are_nearest_rank() -> None:
    from jobtable._operator.dashboard import percentile

    values = [datetime.timedelta(seconds=n) for n in range(1, 101)]
    assert percentile(values, 0.5) == datetime.timedelta(seconds=50)
    assert percentile(values, 0.95) == datetime.timedelta(seconds=95)
    assert percentile(values[:1], 0.95) == datetime.timedelta(seconds=1)
    assert percentile([], 0.5) is None


def test_health_alarms_when_jobs_are_due_and_no_live_runner_exists(
    store: jobtable.Store,
) -> None:
    job.enqueue(store, 1)
    job.enqueue(store, 2, delay=datetime.timedelta(hours=1))

    health = store.health()

    assert health.live_runners == []
    [queue] = health.queues
    assert (queue.queue, queue.due, queue.alarm) == (
        "default",
        1,
        jobtable.QueueAlarm.NO_LIVE_RUNNER,
    )


def test_health_names_the_jobs_a_dead_runner_holds(store: jobtable.Store) -> None:
    held = job.enqueue(store, 1)
    assert claim(store.engine, 1, runner="gone") == [held]

    health = store.health()

    assert health.dead_held == {held: "gone"}
    assert health.queues == []
    with pytest.raises(ValueError, match="lease"):
        store.health(lease=0)


def test_health_says_a_queue_is_not_served_when_live_runners_hold_none_of_its_jobs(
    store: jobtable.Store,
) -> None:
    from jobtable._values import now

    store.engine.write(
        lambda q: q.register_runner(name="alive", now=now(), host=None, process=None)
    )
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    waiting = other.enqueue(store, 1, run_at=past)
    served = job.enqueue(store, 2, run_at=past)
    store.engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[], runner="alive", queue="default", now=now(), max_jobs=1
        )
    )
    job.enqueue(store, 3, run_at=past)

    health = store.health()

    assert health.live_runners == ["alive"]
    assert store.inspect(served).status == jobtable.Status.RUNNING
    by_queue = {q.queue: q for q in health.queues}
    assert by_queue["side"].alarm == jobtable.QueueAlarm.NOT_SERVED
    assert by_queue["side"].oldest_due_at == store.inspect(waiting).run_at
    assert (by_queue["default"].held_by_live, by_queue["default"].alarm) == (1, None)
    assert health.dead_held == {}
