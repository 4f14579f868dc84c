"""Building a runner and registering handlers: the checks of NewRunner and Register (jobs.go).

Misuse is refused at once with an error that names the argument or the kind,
never later inside a worker.
"""

import asyncio
import datetime
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from handled import handled
from pydantic import BaseModel

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int


async def make_thumbnail(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
    return Progress(done=payload.size, total=payload.size)


def make_thumbnail_sync(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
    return Progress(done=payload.size, total=payload.size)


# Runner().


def test_runner_without_a_store_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Store"):
        jobtable.Runner("jobs.db")  # type: ignore[arg-type]


def test_runner_without_a_store_at_all_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Store"):
        jobtable.Runner(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", [0, -1])
def test_runner_with_fewer_than_one_worker_is_an_error(store: jobtable.Store, workers: int) -> None:
    with pytest.raises(ValueError, match=rf"{workers} workers, want at least 1"):
        jobtable.Runner(store, workers=workers)


@pytest.mark.parametrize("workers", [2.5, True, "4"])
def test_runner_with_workers_that_is_not_an_int_is_an_error(
    store: jobtable.Store, workers: Any
) -> None:
    with pytest.raises(ValueError, match="want at least 1"):
        jobtable.Runner(store, workers=workers)


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("poll_interval", 0),
        ("poll_interval", -1.0),
        ("lease", 0),
        ("lease", -5.0),
        ("grace_period", -0.1),
        ("cancel_grace", -1.0),
        ("block_warning", 0),
        ("max_payload_bytes", 0),
        ("retention", datetime.timedelta(days=-1)),
    ],
)
def test_runner_with_a_bad_number_is_an_error_naming_it(
    store: jobtable.Store, argument: str, value: object
) -> None:
    arguments: dict[str, Any] = {argument: value}
    with pytest.raises(ValueError, match=argument):
        jobtable.Runner(store, **arguments)


def test_runner_with_an_empty_name_is_an_error(store: jobtable.Store) -> None:
    with pytest.raises(ValueError, match="name"):
        jobtable.Runner(store, name="")


def test_runner_with_a_logger_that_is_not_a_logger_is_an_error(store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match="logger"):
        jobtable.Runner(store, logger="jobtable")  # type: ignore[arg-type]


# register.


def test_register_returns_a_kind_of_that_name(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    runner.register("archive", make_thumbnail_sync)
    assert thumbnails.name == "thumbnail"
    assert list(runner.kinds) == ["archive", "thumbnail"]


def test_register_an_empty_kind_is_an_error(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(ValueError, match="empty kind"):
        runner.register("", make_thumbnail)


def test_register_given_a_kind_points_to_the_handler_decorator(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    kind = jobtable.Kind("thumbnail", int, int)
    with pytest.raises(TypeError, match=r"takes a kind's name.*@runner\.handler\(kind\)"):
        runner.register(kind, make_thumbnail)  # type: ignore[call-overload]
    assert list(runner.kinds) == []


def test_register_without_a_handler_is_an_error_naming_the_kind(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match=r"'thumbnail'.*no handler"):
        runner.register("thumbnail", None)  # type: ignore[call-overload]


def test_register_something_not_callable_is_an_error_naming_the_kind(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match=r"'thumbnail'.*not callable"):
        runner.register("thumbnail", "make_thumbnail")  # type: ignore[call-overload]


def test_register_twice_for_one_kind_is_an_error_naming_the_kind(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    runner.register("thumbnail", make_thumbnail)
    with pytest.raises(jobtable.RunnerError, match=r"'thumbnail'.*already registered"):
        runner.register("thumbnail", make_thumbnail_sync)


async def test_register_after_start_is_an_error_naming_the_kind(store: jobtable.Store) -> None:
    runner = handled(jobtable.Runner(store))
    await runner.start()
    try:
        with pytest.raises(jobtable.RunnerError, match=r"'thumbnail'.*already started"):
            runner.register("thumbnail", make_thumbnail)
    finally:
        runner.stop()
        await runner.wait()


def test_register_a_handler_without_a_payload_annotation_is_a_type_error(
    store: jobtable.Store,
) -> None:
    def handler(ctx: jobtable.JobContext[Progress], payload) -> Progress:  # type: ignore[no-untyped-def]
        raise AssertionError("never runs")

    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match=r"'thumbnail'.*'payload' has no type annotation"):
        runner.register("thumbnail", handler)


def test_register_a_handler_without_a_return_annotation_is_a_type_error(
    store: jobtable.Store,
) -> None:
    def handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail):  # type: ignore[no-untyped-def]
        raise AssertionError("never runs")

    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match=r"'thumbnail'.*no return annotation"):
        runner.register("thumbnail", handler)


def test_register_a_handler_that_does_not_take_ctx_and_payload_is_a_type_error(
    store: jobtable.Store,
) -> None:
    def handler(payload: Thumbnail) -> Progress:
        raise AssertionError("never runs")

    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match=r"'thumbnail'.*\(ctx, payload\)"):
        runner.register("thumbnail", handler)  # type: ignore[arg-type]


def test_register_a_payload_type_pydantic_cannot_validate_is_a_type_error(
    store: jobtable.Store,
) -> None:
    class Opaque:
        pass

    def handler(ctx: jobtable.JobContext[Progress], payload: Opaque) -> Progress:
        raise AssertionError("never runs")

    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match=r"'thumbnail'.*pydantic"):
        runner.register("thumbnail", handler)


# Handlers of both kinds run.


async def test_an_async_handler_runs_on_the_runners_event_loop(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    threads: list[int] = []

    async def handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        threads.append(threading.get_ident())
        return Progress(done=payload.size, total=payload.size)

    runner = jobtable.Runner(store, workers=2)
    thumbnails = runner.register("thumbnail", handler)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=3))
    await runner.start()
    try:
        await wait_until(finished(runner, [job_id]))
    finally:
        runner.stop()
        await runner.wait()
    assert thumbnails.get(job_id).result == Progress(done=3, total=3)
    assert threads == [threading.get_ident()]


async def test_a_sync_handler_runs_in_a_thread_not_on_the_event_loop(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    threads: list[int] = []
    loops: list[bool] = []

    def handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        threads.append(threading.get_ident())
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loops.append(False)
        else:
            loops.append(True)
        return Progress(done=payload.size, total=payload.size)

    runner = jobtable.Runner(store, workers=2)
    thumbnails = runner.register("thumbnail", handler)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=4))
    await runner.start()
    try:
        await wait_until(finished(runner, [job_id]))
    finally:
        runner.stop()
        await runner.wait()
    assert thumbnails.get(job_id).result == Progress(done=4, total=4)
    assert len(threads) == 1
    assert threads[0] != threading.get_ident()
    assert loops == [False]


async def test_a_sync_handler_publishes_while_the_event_loop_keeps_running(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    release = threading.Event()

    def handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        ctx.publish(Progress(done=1, total=2))
        # Blocking here must not block the loop: the test keeps polling on it.
        if not release.wait(30):
            raise AssertionError("the test never released the handler")
        return Progress(done=2, total=2)

    runner = jobtable.Runner(store, workers=1)
    thumbnails = runner.register("thumbnail", handler)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=1))
    await runner.start()
    try:
        await wait_until(lambda: thumbnails.get(job_id).result == Progress(done=1, total=2))
        assert thumbnails.get(job_id).status is jobtable.Status.RUNNING
        release.set()
        await wait_until(finished(runner, [job_id]))
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    assert thumbnails.get(job_id).status is jobtable.Status.SUCCEEDED
    assert thumbnails.get(job_id).result == Progress(done=2, total=2)


@pytest.mark.parametrize(("first", "cap"), [(0, 1.0), (-0.1, 1.0), (2.0, 1.0)])
def test_a_backoff_needs_a_positive_first_wait_no_longer_than_its_cap(
    first: float, cap: float
) -> None:
    with pytest.raises(ValueError, match=r"want 0 < first <= cap"):
        jobtable.WriteBackoff(first, cap)


def test_a_backoff_doubles_up_to_its_cap() -> None:
    backoff = jobtable.WriteBackoff(0.1, 0.3)
    assert [backoff.after(0.1), backoff.after(0.2)] == [0.2, 0.3]


def test_runner_retry_settings_are_checked(store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match="retry_backoff must be a WriteBackoff"):
        jobtable.Runner(store, retry_backoff=(0.1, 1.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give_up_after must be at least 1"):
        jobtable.Runner(store, give_up_after=0)
    runner = jobtable.Runner(store)
    assert (runner.retry_backoff, runner.give_up_after) == (jobtable.WriteBackoff(0.05, 5.0), 8)


async def test_start_without_a_handler_is_a_runner_error_saying_why(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(jobtable.RunnerError, match="no handler, so it would fail every job"):
        await runner.start()
    # Nothing started: a handler attached now is taken, and start works.
    runner.register("thumbnail", make_thumbnail)
    await runner.start()
    runner.stop()
    await runner.wait()


def test_a_handler_for_a_kind_whose_queue_the_runner_does_not_serve_is_an_error(
    store: jobtable.Store,
) -> None:
    emails = jobtable.Kind("email", str, str, queue="emails")
    runner = jobtable.Runner(store, queues={"default": 2, "reports": 1})
    with pytest.raises(
        jobtable.RunnerError,
        match=r"handler 'email': the kind's queue 'emails' is not one of the runner's queues "
        r"\['default', 'reports'\]",
    ):
        runner.handler(emails)(send_email)
    assert runner.kinds == []


def test_register_on_a_runner_without_the_default_queue_uses_its_first_queue(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, queues={"emails": 1, "other": 1})
    kind = runner.register("thumbnail", make_thumbnail)
    assert kind.options.queue == "emails"
    job_id = kind.enqueue(Thumbnail(photo_id="p", size=1))
    assert store.inspect(job_id).queue == "emails"


async def send_email(ctx: jobtable.JobContext[str], to: str) -> str:
    return to
