"""The whole record of a job, the listing with filters and pages, and the counts by queue."""

import pytest

import jobtable

ping = jobtable.Kind("ping", int, int)
pong = jobtable.Kind("pong", int, int, queue="other")


def test_a_jobs_model_dump_keeps_exactly_the_five_keys(store: jobtable.Store) -> None:
    job_id = ping.enqueue(store, 1, priority=3, queue="q")
    assert set(store.get(job_id).model_dump()) == {"id", "kind", "status", "result", "error"}


async def test_inspect_returns_the_whole_record(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=1, name="inspector")

    @runner.handler(ping)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload * 2

    job_id = ping.enqueue(
        store, 21, priority=4, max_attempts=2, timeout=9.5, tags=["t1"], meta={"who": "ops"}
    )
    queued = store.inspect(job_id)
    assert (queued.status, queued.attempt, queued.started_at, queued.runner) == (
        jobtable.Status.QUEUED,
        0,
        None,
        None,
    )
    await runner.run_next()
    record = await store.ainspect(job_id)
    assert record.model_dump(
        exclude={"seq", "run_at", "created_at", "started_at", "finished_at"}
    ) == {
        "id": job_id,
        "kind": "ping",
        "queue": "default",
        "priority": 4,
        "status": jobtable.Status.SUCCEEDED,
        "attempt": 1,
        "max_attempts": 2,
        "timeout": 9.5,
        "cancel_requested": False,
        "runner": "inspector",
        "errors": [],
        "error": None,
        "payload": 21,
        "result": 42,
        "tags": ["t1"],
        "meta": {"who": "ops"},
        "waiting": None,
        "steps": [],
        "workflow": None,
    }
    assert record.started_at is not None
    assert record.finished_at is not None
    assert record.created_at <= record.started_at <= record.finished_at
    with pytest.raises(jobtable.JobNotFound):
        store.inspect("nope")


async def test_the_listing_filters_and_pages_newest_first(store: jobtable.Store) -> None:
    pings = ping.enqueue_many(store, range(5))
    pongs = pong.enqueue_many(store, range(3))
    store.cancel(pings[0])
    every = store.list_jobs(limit=1000)
    assert [r.id for r in every] == [*reversed(pongs), *reversed(pings)]
    assert [r.id for r in store.list_jobs(kind="pong")] == list(reversed(pongs))
    assert [r.id for r in store.list_jobs(queue="default", status="queued")] == list(
        reversed(pings[1:])
    )
    assert [r.id for r in await store.alist_jobs(status=jobtable.Status.CANCELLED)] == [pings[0]]
    pages: list[str] = []
    before = None
    while page := store.list_jobs(limit=3, before=before):
        pages += [r.id for r in page]
        before = page[-1].seq
    assert pages == [r.id for r in every]
    with pytest.raises(ValueError, match="limit"):
        store.list_jobs(limit=0)
    with pytest.raises(ValueError, match="lost"):
        store.list_jobs(status="lost")


async def test_counts_give_each_queues_jobs_by_status(store: jobtable.Store) -> None:
    assert store.counts() == {}
    pings = ping.enqueue_many(store, range(4))
    pong.enqueue(store, 1)
    store.cancel(pings[0])
    assert await store.acounts() == {
        "default": {jobtable.Status.QUEUED: 3, jobtable.Status.CANCELLED: 1},
        "other": {jobtable.Status.QUEUED: 1},
    }
