"""Real usage of jobtable's public API: it must type-check under ``mypy --strict``.

test_typing_examples.py runs mypy on this file; it is never imported.
"""

import datetime
import logging
import sqlite3
from typing import assert_type

from pydantic import BaseModel
from typing_extensions import TypedDict

import jobtable


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int
    url: str | None = None


class Archive(TypedDict):
    paths: list[str]


async def make_thumbnail(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
    for done in range(3):
        await ctx.apublish(Progress(done=done, total=3))
    if payload.size > 4096:
        raise jobtable.Failure("That size is too large.")
    if await ctx.asleep(0.1) or ctx.stopping:
        return Progress(done=0, total=3)
    return Progress(done=3, total=3, url=f"/thumbs/{payload.photo_id}")


def make_archive(ctx: jobtable.JobContext[int], payload: Archive) -> int:
    ctx.publish(0)
    if ctx.sleep(0.1):
        raise jobtable.Failure("Stopped.")
    return len(payload["paths"])


def count_words(ctx: jobtable.JobContext[dict[str, int]], payload: str) -> dict[str, int]:
    return {word: len(word) for word in payload.split()}


def setup() -> None:
    store = jobtable.Store.open("app.db")
    runner = jobtable.Runner(store, workers=4, logger=logging.getLogger("app"), name="web-1")

    thumbnails = runner.register("thumbnail", make_thumbnail)
    assert_type(thumbnails, jobtable.Kind[Thumbnail, Progress])
    archives = runner.register("archive", make_archive)
    assert_type(archives, jobtable.Kind[Archive, int])
    words = runner.register("words", count_words)
    assert_type(words, jobtable.Kind[str, dict[str, int]])

    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=256))
    assert_type(job_id, str)
    assert_type(archives.enqueue({"paths": ["a", "b"]}), str)
    assert_type(archives.enqueue_many([{"paths": []}]), list[str])
    assert_type(words.enqueue("a few words"), str)

    job = runner.get(job_id)
    assert_type(job, jobtable.Job)
    assert_type(job.status, jobtable.Status)
    assert_type(job.error, str | None)
    assert_type(job.model_dump_json(), str)

    typed = thumbnails.get(job_id)
    assert_type(typed, jobtable.Job[Progress])
    assert_type(typed.result, Progress | None)
    if typed.result is not None:
        assert_type(typed.result.done, int)
    assert_type(archives.get(job_id).result, int | None)
    assert_type(thumbnails.wait(job_id, timeout=datetime.timedelta(seconds=5)), Progress)
    assert_type(archives.wait(store, job_id), int)
    assert_type(archives.enqueue_and_wait({"paths": []}, wait_timeout=1.5, priority=1), int)

    missing: jobtable.Job | None
    try:
        missing = runner.get("unknown")
    except jobtable.JobNotFound:
        missing = None
    assert_type(missing, jobtable.Job | None)
    store.close()


async def serve() -> None:
    with jobtable.Store.open("app.db") as store:
        runner = jobtable.Runner(store)
        thumbnails = runner.register("thumbnail", make_thumbnail)
        job_id = await thumbnails.aenqueue(Thumbnail(photo_id="p1", size=256))
        assert_type(await thumbnails.aenqueue_many([Thumbnail(photo_id="p2", size=1)]), list[str])
        await runner.start()
        assert_type(await runner.aget(job_id), jobtable.Job)
        assert_type(await thumbnails.aget(job_id), jobtable.Job[Progress])
        assert_type(await thumbnails.await_result(job_id, timeout=5), Progress)
        assert_type(await thumbnails.await_result(store, job_id), Progress)
        done = await thumbnails.aenqueue_and_wait(Thumbnail(photo_id="p3", size=1), wait_timeout=5)
        assert_type(done, Progress)
        async for update in thumbnails.stream(store, job_id):
            assert_type(update, jobtable.Job[Progress])
            assert_type(update.result, Progress | None)
        runner.stop()
        await runner.wait()


def work() -> None:
    with jobtable.Store.open("app.db") as store:
        runner = jobtable.Runner(store)
        runner.register("thumbnail", make_thumbnail)
        runner.run()


# The declaration form: a module both processes import declares the kinds.
thumbnail = jobtable.Kind("thumbnail", Thumbnail, Progress)
archive = jobtable.Kind("archive", Archive, int)


def web(store: jobtable.Store) -> None:
    assert_type(thumbnail, jobtable.Kind[Thumbnail, Progress])
    job_id = thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=256))
    assert_type(job_id, str)
    assert_type(archive.enqueue_many(store, [{"paths": ["a"]}]), list[str])
    assert_type(thumbnail.get(store, job_id), jobtable.Job[Progress])
    assert_type(thumbnail.get(store, job_id).result, Progress | None)
    assert_type(store.get(job_id), jobtable.Job)


def web_in_transaction(store: jobtable.Store, conn: sqlite3.Connection) -> None:
    with conn:
        job_id = thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=256), conn=conn)
        assert_type(job_id, str)
        assert_type(archive.enqueue_many(store, [{"paths": []}], conn=conn, priority=1), list[str])


async def aweb_in_transaction(store: jobtable.Store, conn: object) -> None:
    job_id = await thumbnail.aenqueue(store, Thumbnail(photo_id="p1", size=256), conn=conn)
    assert_type(job_id, str)


async def aweb(store: jobtable.Store) -> None:
    job_id = await thumbnail.aenqueue(store, Thumbnail(photo_id="p1", size=256))
    assert_type(await archive.aenqueue_many(store, [{"paths": []}]), list[str])
    assert_type(await thumbnail.aget(store, job_id), jobtable.Job[Progress])
    assert_type(await store.aget(job_id), jobtable.Job)


def worker(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=4, retry_backoff=jobtable.WriteBackoff(0.01, 0.1))

    @runner.handler(thumbnail)
    async def thumbnail_handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        await ctx.apublish(Progress(done=0, total=1))
        return Progress(done=1, total=1)

    @runner.handler(archive)
    def archive_handler(ctx: jobtable.JobContext[int], payload: Archive) -> int:
        return len(payload["paths"])

    runner.handler(jobtable.Kind("words", str, dict))(count_words)
    runner.run()


def unique_and_periodic(store: jobtable.Store) -> None:
    per_photo = jobtable.Unique(fields=("photo_id",), period=datetime.timedelta(hours=1))
    result = thumbnail.enqueue_result(store, Thumbnail(photo_id="p1", size=1), unique=per_photo)
    assert_type(result, jobtable.EnqueueResult)
    assert_type(result.duplicate, bool)
    results = archive.enqueue_many_results(store, [{"paths": []}], unique=jobtable.Unique())
    assert_type(results, list[jobtable.EnqueueResult])
    statuses = jobtable.Unique().statuses | {jobtable.Status.SUCCEEDED}
    assert_type(thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=1), unique=None), str)
    runner = jobtable.Runner(store)
    runner.periodic(thumbnail, cron="0 7 * * 1-5", payload=Thumbnail(photo_id="p", size=1))
    runner.periodic(
        archive, every=datetime.timedelta(minutes=5), payload=Archive(paths=[]), missed="skip"
    )
    runner.periodic(
        archive, every=datetime.timedelta(hours=1), payload=Archive(paths=[]), queue="q", tags=["t"]
    )
    jobtable.Unique(key="k", statuses=statuses)


async def aunique(store: jobtable.Store) -> None:
    result = await thumbnail.aenqueue_result(store, Thumbnail(photo_id="p1", size=1))
    assert_type(result, jobtable.EnqueueResult)
    assert_type(await archive.aenqueue_many_results(store, []), list[jobtable.EnqueueResult])


class Decision(BaseModel):
    approved: bool


decided = jobtable.Signal("decided", Decision)


async def waits_for_a_decision(ctx: jobtable.JobContext[str], payload: str) -> str:
    await ctx.sleep_for(datetime.timedelta(minutes=5))
    answer = await ctx.wait_for(decided, key=payload, timeout=datetime.timedelta(days=1))
    if isinstance(answer, jobtable.TimedOut):
        return "no decision"
    approval = await ctx.wait_for(jobtable.APPROVAL, key=ctx.id)
    return f"{answer.approved} {approval.approved} {approval.by}"


def sends_a_decision(store: jobtable.Store) -> int:
    return store.signal(decided, "order-1", Decision(approved=True))
