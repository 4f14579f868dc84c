"""Enqueue: a payload is checked and stored queued, and a worker finds it.

Only a payload of the kind's type is stored; a job enqueued before start
waits for it; an enqueue wakes an idle worker at once, and a job another
process enqueued is found by polling (or a notification) without one.
"""

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pydantic import BaseModel

import jobtable
from jobtable._engines.base import Queries
from jobtable._values import now

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Blob(BaseModel):
    data: Any


async def make_thumbnail(ctx: jobtable.JobContext[int], payload: Thumbnail) -> int:
    return payload.size


async def keep_blob(ctx: jobtable.JobContext[int], payload: Blob) -> int:
    return 0


class _Rollback(Exception):
    pass


def queued_jobs(store: jobtable.Store) -> int:
    """Counts the queued jobs by claiming them all in a write that is then rolled back."""
    counted: list[int] = []

    def count(q: Queries) -> None:
        counted.append(
            len(
                q.finish_and_claim_jobs(
                    outcomes=[],
                    queue="default",
                    runner=None,
                    now=now(),
                    max_jobs=100_000,
                )[1]
            )
        )
        raise _Rollback

    with pytest.raises(_Rollback):
        store.engine.write(count)
    return counted[0]


def test_enqueue_stores_a_queued_job_and_returns_its_id(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=256))
    job = runner.get(job_id)
    assert job == jobtable.Job(
        id=job_id, kind="thumbnail", status=jobtable.Status.QUEUED, result=None, error=None
    )
    assert queued_jobs(store) == 1


async def test_aenqueue_stores_a_queued_job(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    job_id = await thumbnails.aenqueue(Thumbnail(photo_id="p1", size=256))
    assert (await runner.aget(job_id)).status is jobtable.Status.QUEUED


def test_each_enqueue_gets_its_own_id(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    ids = [thumbnails.enqueue(Thumbnail(photo_id="p", size=1)) for _ in range(20)]
    assert len(set(ids)) == 20


def test_enqueue_of_a_payload_of_the_wrong_type_is_a_payload_error_and_stores_nothing(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    with pytest.raises(jobtable.PayloadError, match="'thumbnail'"):
        thumbnails.enqueue(Blob(data=1))  # type: ignore[call-overload]
    with pytest.raises(jobtable.PayloadError, match="'thumbnail'") as raised:
        thumbnails.enqueue({"photo_id": "p1", "size": 1})  # type: ignore[call-overload]
    # One line that says what was given and what is wanted, not pydantic's
    # serializer warning quoting the value.
    assert str(raised.value) == (
        "enqueue 'thumbnail': payload is not a valid Thumbnail: got a value of type dict, "
        "want Thumbnail; a dict is not converted: build the Thumbnail first"
    )
    assert queued_jobs(store) == 0


def test_enqueue_of_a_payload_that_does_not_validate_is_a_payload_error(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    invalid = Thumbnail.model_construct(photo_id="p1", size="large")  # type: ignore[arg-type]
    with pytest.raises(jobtable.PayloadError, match="'thumbnail'") as raised:
        thumbnails.enqueue(invalid)
    assert "field 'size' is of type str, want int" in str(raised.value)
    assert "large" not in str(raised.value)
    assert queued_jobs(store) == 0


def test_enqueue_of_a_payload_that_cannot_be_encoded_is_a_payload_error(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    blobs = runner.register("blob", keep_blob)
    with pytest.raises(jobtable.PayloadError, match="'blob'"):
        blobs.enqueue(Blob(data=object()))
    assert queued_jobs(store) == 0


def test_enqueue_of_a_payload_over_the_size_limit_is_a_payload_error(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, max_payload_bytes=100)
    blobs = runner.register("blob", keep_blob)
    with pytest.raises(jobtable.PayloadError, match=r"'blob'.*over the limit of 100"):
        blobs.enqueue(Blob(data="x" * 100))
    assert queued_jobs(store) == 0
    blobs.enqueue(Blob(data="x" * 10))
    assert queued_jobs(store) == 1


def test_a_payload_error_is_also_a_value_error() -> None:
    assert issubclass(jobtable.PayloadError, ValueError)
    assert issubclass(jobtable.PayloadError, jobtable.JobtableError)


def test_enqueue_many_stores_every_job_in_order(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    ids = thumbnails.enqueue_many(Thumbnail(photo_id=f"p{i}", size=i) for i in range(5))
    assert len(set(ids)) == 5
    assert [runner.get(i).status for i in ids] == [jobtable.Status.QUEUED] * 5
    assert queued_jobs(store) == 5


def test_enqueue_many_stores_nothing_when_one_payload_is_bad(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    payloads: list[Any] = [Thumbnail(photo_id="p1", size=1), Blob(data=1)]
    payloads.append(Thumbnail(photo_id="p3", size=3))
    with pytest.raises(jobtable.PayloadError):
        thumbnails.enqueue_many(payloads)
    assert queued_jobs(store) == 0


async def test_aenqueue_many_stores_nothing_when_one_payload_is_bad(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, max_payload_bytes=50)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    payloads = [Thumbnail(photo_id="p1", size=1), Thumbnail(photo_id="p" * 100, size=2)]
    with pytest.raises(jobtable.PayloadError):
        await thumbnails.aenqueue_many(payloads)
    assert queued_jobs(store) == 0


def test_enqueue_many_of_no_payloads_stores_nothing(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    assert thumbnails.enqueue_many([]) == []
    assert queued_jobs(store) == 0


async def test_a_job_enqueued_before_start_waits_for_it_then_runs(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=7))
    assert runner.get(job_id).status is jobtable.Status.QUEUED
    await runner.start()
    try:
        await wait_until(finished(runner, [job_id]))
    finally:
        runner.stop()
        await runner.wait()
    job = thumbnails.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, 7)


async def start_idle(runner: jobtable.Runner, kind: jobtable.Kind[Thumbnail, int]) -> None:
    """Starts runner and waits until it ran a first job, so its workers are idle after."""
    first = kind.enqueue(Thumbnail(photo_id="first", size=0))
    await runner.start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while runner.get(first).status is not jobtable.Status.SUCCEEDED:
        assert loop.time() < deadline, "the first job never ran"
        await asyncio.sleep(0.01)


async def test_enqueue_wakes_an_idle_worker(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    # Polling alone would find the job only after a minute.
    runner = jobtable.Runner(store, workers=2, poll_interval=60)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    await start_idle(runner, thumbnails)
    try:
        job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=1))
        await wait_until(finished(runner, [job_id]))
        job_id = await thumbnails.aenqueue(Thumbnail(photo_id="p2", size=2))
        await wait_until(finished(runner, [job_id]))
    finally:
        runner.stop()
        await runner.wait()


async def test_enqueue_from_another_thread_wakes_an_idle_worker(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = jobtable.Runner(store, workers=2, poll_interval=60)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    await start_idle(runner, thumbnails)
    ids: list[str] = []
    try:
        thread = threading.Thread(
            target=lambda: ids.append(thumbnails.enqueue(Thumbnail(photo_id="p1", size=1)))
        )
        thread.start()
        await asyncio.to_thread(thread.join)
        await wait_until(finished(runner, ids))
    finally:
        runner.stop()
        await runner.wait()
    assert runner.get(ids[0]).status is jobtable.Status.SUCCEEDED


async def test_a_job_enqueued_by_another_process_is_found_without_a_local_enqueue(
    store: jobtable.Store, store_target: str, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = jobtable.Runner(store, workers=2, poll_interval=0.1)
    runner.register("thumbnail", make_thumbnail)
    # Another Store and Runner on the same database stand for a web process
    # that enqueues: nothing of theirs can wake this runner's workers.
    with jobtable.Store.open(store_target) as other_store:
        web = jobtable.Runner(other_store, name="web")
        web_thumbnails = web.register("thumbnail", make_thumbnail)
        await runner.start()
        try:
            first = web_thumbnails.enqueue(Thumbnail(photo_id="p1", size=1))
            await wait_until(finished(runner, [first]))
            # Once more while the workers are idle.
            second = await web_thumbnails.aenqueue(Thumbnail(photo_id="p2", size=2))
            await wait_until(finished(runner, [second]))
        finally:
            runner.stop()
            await runner.wait()
        assert web_thumbnails.get(second).result == 2
