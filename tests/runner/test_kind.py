"""Kinds as declarations: a web process enqueues through a store, a worker attaches handlers.

``jobtable.Kind(name, P, R)`` imports no handler code. Its methods take the
store first; ``Runner.handler(kind)`` attaches a handler to it. A worker that
has no handler for a job's kind fails the job with ``no handler for job kind``.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from handled import handled
from pydantic import BaseModel

import jobtable

WaitUntil = Callable[..., Awaitable[None]]


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int


thumbnail = jobtable.Kind("thumbnail", Thumbnail, Progress)
words = jobtable.Kind("words", str, int)


def succeeded(store: jobtable.Store, ids: list[str]) -> Callable[[], bool]:
    return lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in ids)


async def test_a_job_enqueued_through_the_store_runs_under_an_attached_handler(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    job_id = thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=3))
    assert store.get(job_id).status is jobtable.Status.QUEUED
    runner = jobtable.Runner(store, workers=2)

    @runner.handler(thumbnail)
    async def make(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        return Progress(done=payload.size, total=payload.size)

    assert runner.kinds == ["thumbnail"]
    await runner.start()
    try:
        await wait_until(succeeded(store, [job_id]))
    finally:
        runner.stop()
        await runner.wait()
    typed = thumbnail.get(store, job_id)
    assert typed.result == Progress(done=3, total=3)
    plain = store.get(job_id)
    assert plain.result == {"done": 3, "total": 3}
    assert plain.model_dump_json() == (
        f'{{"id":"{job_id}","kind":"thumbnail","status":"succeeded",'
        '"result":{"done":3,"total":3},"error":null}'
    )


async def test_the_async_forms_enqueue_and_read_through_the_store(store: jobtable.Store) -> None:
    [a, b] = await words.aenqueue_many(store, ["one", "two"])
    c = await words.aenqueue(store, "three")
    assert [(await words.aget(store, i)).status for i in (a, b, c)] == [jobtable.Status.QUEUED] * 3
    assert (await store.aget(c)).kind == "words"
    assert words.enqueue_many(store, []) == []


async def test_a_plain_def_handler_attached_with_the_decorator_runs_in_a_thread(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store)

    @runner.handler(words)
    def count(ctx: jobtable.JobContext[int], payload: str) -> int:
        return len(payload.split())

    job_id = words.enqueue(store, "a few words")
    assert await runner.run_next() == job_id
    assert words.get(store, job_id).result == 3


async def test_a_worker_without_the_kinds_handler_fails_its_job_naming_the_kind(
    store: jobtable.Store,
) -> None:
    job_id = thumbnail.enqueue(store, Thumbnail(photo_id="p1", size=1))
    runner = jobtable.Runner(store)
    runner.handler(words)(lambda ctx, payload: 0)
    assert await runner.run_next() == job_id
    job = store.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, "no handler for job kind thumbnail")


async def test_an_enqueue_through_the_store_wakes_an_idle_runner_of_this_process(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    # Polling alone would find the job only after a minute.
    runner = jobtable.Runner(store, workers=1, poll_interval=60)
    runner.handler(words)(lambda ctx, payload: len(payload))
    await runner.start()
    try:
        first = words.enqueue(store, "ab")
        await wait_until(succeeded(store, [first]))
        second = await words.aenqueue(store, "abc")
        await wait_until(succeeded(store, [second]))
    finally:
        runner.stop()
        await runner.wait()
    assert words.get(store, second).result == 3


def test_a_declared_kind_without_a_store_is_an_error_naming_the_kind(
    store: jobtable.Store,
) -> None:
    unbound: Any = words
    with pytest.raises(TypeError, match=r"enqueue 'words'.*pass the store"):
        unbound.enqueue("a")
    with pytest.raises(TypeError, match=r"get 'words'.*pass the store"):
        unbound.get("some-id")
    with pytest.raises(TypeError, match=r"enqueue 'words': want a Store first, got str"):
        unbound.enqueue("not a store", "a")


def test_the_kind_register_returns_also_takes_a_store(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)

    async def size(ctx: jobtable.JobContext[int], payload: Thumbnail) -> int:
        return payload.size

    sizes = runner.register("size", size)
    job_id = sizes.enqueue(store, Thumbnail(photo_id="p", size=1))
    assert sizes.get(job_id) == sizes.get(store, job_id)


def test_an_enqueue_through_the_store_over_its_payload_limit_stores_nothing(
    store_target: str,
) -> None:
    with jobtable.Store.open(store_target, max_payload_bytes=10) as small:
        with pytest.raises(jobtable.PayloadError, match=r"'words'.*over the limit of 10"):
            words.enqueue(small, "x" * 20)
        with pytest.raises(jobtable.PayloadError, match=r"'words'"):
            words.enqueue(small, 5)  # type: ignore[call-overload]
        assert words.enqueue(small, "ok") != ""


def test_a_kind_reads_no_job_of_another_kind(store: jobtable.Store) -> None:
    job_id = words.enqueue(store, "a")
    with pytest.raises(jobtable.JobNotFound, match="'words' job, not 'thumbnail'"):
        thumbnail.get(store, job_id)


def test_a_kind_needs_a_name_and_types_pydantic_can_store() -> None:
    with pytest.raises(ValueError, match="empty kind"):
        jobtable.Kind("", str, int)
    with pytest.raises(TypeError, match=r"Kind 'bad'.*pydantic"):
        jobtable.Kind("bad", object(), int)  # type: ignore[arg-type]


def test_a_second_handler_for_a_kind_is_an_error_naming_the_kind(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    runner.handler(words)(lambda ctx, payload: 0)
    with pytest.raises(jobtable.RunnerError, match=r"handler 'words'.*already registered"):
        runner.handler(words)(lambda ctx, payload: 1)

    async def other(ctx: jobtable.JobContext[int], payload: str) -> int:
        return 0

    with pytest.raises(jobtable.RunnerError, match=r"register 'words'.*already registered"):
        runner.register("words", other)


async def test_a_handler_attached_after_start_is_an_error_naming_the_kind(
    store: jobtable.Store,
) -> None:
    runner = handled(jobtable.Runner(store))
    await runner.start()
    try:
        with pytest.raises(jobtable.RunnerError, match=r"handler 'words'.*already started"):
            runner.handler(words)(lambda ctx, payload: 0)
    finally:
        runner.stop()
        await runner.wait()


def test_a_handler_that_does_not_take_ctx_and_payload_is_an_error(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    attach: Any = runner.handler(words)
    with pytest.raises(TypeError, match=r"handler 'words'.*\(ctx, payload\)"):
        attach(lambda payload: 0)
    with pytest.raises(TypeError, match=r"handler 'words'.*not callable"):
        attach("not a function")
    with pytest.raises(TypeError, match=r"want a jobtable\.Kind, got str"):
        runner.handler("words")  # type: ignore[call-overload]


def test_a_handler_that_takes_the_payload_first_is_an_error_at_attach(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    attach: Any = runner.handler(words)

    async def swapped(payload: str, ctx: jobtable.JobContext[int]) -> int:
        return 0

    def swapped_plain(payload: str, ctx: jobtable.JobContext) -> int:  # type: ignore[type-arg]
        return 0

    for handler in (swapped, swapped_plain):
        with pytest.raises(TypeError, match=r"handler 'words'.*JobContext first"):
            attach(handler)

    async def ordered(ctx: jobtable.JobContext[int], payload: str) -> int:
        return 0

    attach(ordered)  # the right order, and unannotated lambdas above, pass
