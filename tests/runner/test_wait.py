"""Waiting for a job's typed result: Kind.wait, await_result and enqueue_and_wait.

Each wait is woken by the commit of its job's outcome: the registry's
fallback poll is set to an hour in these tests, so a wait that returns was
woken by PostgreSQL's NOTIFY or SQLite's file watch, never by polling.
"""

import asyncio
import datetime
import pathlib
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import psycopg
import pytest
from psycopg import sql
from pydantic import BaseModel

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._values import now
from jobtable._wait.waiters import Waiters, waiters_of

WaitUntil = Callable[..., Awaitable[None]]
WAITER = pathlib.Path(__file__).with_name("wait_process.py")


class Size(BaseModel):
    width: int


resize = jobtable.Kind("resize", Size, Size)
other = jobtable.Kind("other", int, int)
charge = jobtable.Kind("charge", int, str)


@pytest.fixture
def waiters(store: jobtable.Store) -> Waiters:
    """The store's registry of waits, its safety-net poll an hour long."""
    registry = waiters_of(store, store.engine)
    registry.poll = 3600.0
    return registry


@pytest.fixture
async def runner(store: jobtable.Store) -> AsyncIterator[jobtable.Runner]:
    """A runner over the store with handlers for resize and charge, stopped afterwards."""
    runner = jobtable.Runner(store, workers=4)

    @runner.handler(resize)
    async def double(ctx: jobtable.JobContext[Size], payload: Size) -> Size:
        return Size(width=payload.width * 2)

    @runner.handler(charge)
    def pay(ctx: jobtable.JobContext[str], payload: int) -> str:
        if payload < 0:
            raise jobtable.Failure("card declined")
        raise RuntimeError("card 4111-1111-1111-1111 password=hunter2")

    yield runner
    runner.stop()
    await runner.wait()


async def test_a_wait_returns_the_typed_result_once_the_job_succeeds(
    store: jobtable.Store, runner: jobtable.Runner, waiters: Waiters, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=3))
    waiting = asyncio.create_task(resize.await_result(store, job_id, timeout=60))
    in_thread = asyncio.create_task(asyncio.to_thread(resize.wait, store, job_id, timeout=60))
    await wait_until(lambda: len(waiters) == 1)
    assert store.get(job_id).status is jobtable.Status.QUEUED
    await runner.start()
    assert await waiting == Size(width=6)
    assert await in_thread == Size(width=6)
    assert len(waiters) == 0


async def test_a_failed_job_raises_its_stored_message_only(
    store: jobtable.Store, runner: jobtable.Runner, waiters: Waiters
) -> None:
    crashed = charge.enqueue(store, 1)
    declined = charge.enqueue(store, -1)
    await runner.start()
    with pytest.raises(jobtable.JobFailed) as caught:
        await charge.await_result(store, crashed, timeout=60)
    assert (caught.value.job_id, caught.value.message) == (crashed, jobtable.MESSAGE_INTERNAL)
    for text in (str(caught.value), repr(caught.value.args)):
        assert "hunter2" not in text
        assert "4111" not in text
    with pytest.raises(jobtable.JobFailed, match="card declined") as caught:
        await asyncio.to_thread(charge.wait, store, declined, timeout=60)
    assert caught.value.message == "card declined"


async def test_a_cancelled_job_raises_job_cancelled(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=1))
    waiting = asyncio.create_task(resize.await_result(store, job_id, timeout=60))
    await wait_until(lambda: len(waiters) == 1 and waiters.listening)
    assert store.cancel(job_id) is jobtable.CancelResult.CANCELLED
    with pytest.raises(jobtable.JobCancelled) as caught:
        await waiting
    assert caught.value.job_id == job_id


async def test_a_timeout_leaves_the_job_queued_and_names_it(
    store: jobtable.Store, waiters: Waiters
) -> None:
    job_id = resize.enqueue(store, Size(width=1))
    with pytest.raises(jobtable.WaitTimeout) as caught:
        await resize.await_result(store, job_id, timeout=datetime.timedelta(milliseconds=20))
    assert isinstance(caught.value, TimeoutError)
    assert caught.value.job_id == job_id
    with pytest.raises(TimeoutError):
        resize.wait(store, job_id, timeout=0.02)
    with pytest.raises(jobtable.WaitTimeout) as caught:
        await resize.aenqueue_and_wait(store, Size(width=2), wait_timeout=0.02, priority=3)
    assert store.get(caught.value.job_id).status is jobtable.Status.QUEUED
    assert store.inspect(caught.value.job_id).priority == 3
    assert store.get(job_id).status is jobtable.Status.QUEUED
    assert len(waiters) == 0


async def test_an_unknown_id_or_a_job_of_another_kind_waits_for_nothing(
    store: jobtable.Store, waiters: Waiters
) -> None:
    with pytest.raises(jobtable.JobNotFound, match="nope"):
        resize.wait(store, "nope", timeout=60)
    with pytest.raises(jobtable.JobNotFound, match="nope"):
        await resize.await_result(store, "nope", timeout=60)
    job_id = other.enqueue(store, 1)
    with pytest.raises(jobtable.JobNotFound, match="is a 'other' job, not 'resize'"):
        resize.wait(store, job_id, timeout=60)
    with pytest.raises(jobtable.JobNotFound, match="nothing waits"):
        await resize.await_result(store, job_id, timeout=60)
    assert len(waiters) == 0


@pytest.mark.parametrize("timeout", [-1, float("nan"), "1", True])
def test_a_bad_timeout_is_refused_before_anything_is_stored(
    store: jobtable.Store, timeout: object
) -> None:
    with pytest.raises((TypeError, ValueError), match="timeout"):
        resize.enqueue_and_wait(store, Size(width=1), wait_timeout=timeout)  # type: ignore[call-overload]
    assert store.counts() == {}


async def test_a_wait_for_a_job_that_already_ended_returns_at_once(
    store: jobtable.Store, runner: jobtable.Runner, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=5))
    await runner.start()
    await wait_until(lambda: store.get(job_id).status is jobtable.Status.SUCCEEDED)
    # A timeout of 0 fails any wait that registers rather than returning from its read.
    assert resize.wait(store, job_id, timeout=0) == Size(width=10)
    assert await resize.await_result(store, job_id, timeout=0) == Size(width=10)


async def test_enqueue_and_wait_returns_the_result(
    store: jobtable.Store, runner: jobtable.Runner, waiters: Waiters
) -> None:
    await runner.start()
    assert await resize.aenqueue_and_wait(store, Size(width=4), wait_timeout=60) == Size(width=8)
    done = await asyncio.to_thread(resize.enqueue_and_wait, store, Size(width=1), wait_timeout=60)
    assert done == Size(width=2)


async def test_enqueue_and_wait_refuses_a_conn_and_stores_nothing(store: jobtable.Store) -> None:
    # The job would be stored at that transaction's commit: no wait could see it.
    conn = object()
    with pytest.raises(ValueError, match=r"enqueue_and_wait 'resize': conn= is refused"):
        resize.enqueue_and_wait(store, Size(width=1), conn=conn)
    with pytest.raises(ValueError, match=r"aenqueue_and_wait 'resize': conn= is refused"):
        await resize.aenqueue_and_wait(store, Size(width=1), conn=conn)
    assert store.list_jobs() == []


async def test_cancelling_an_awaiting_task_unregisters_its_wait(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=1))
    waiting = asyncio.create_task(resize.await_result(store, job_id, timeout=60))
    await wait_until(lambda: len(waiters) == 1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert len(waiters) == 0


def listeners_of_ends(store: jobtable.Store) -> int:
    """How many listeners (each one connection) the store's PostgreSQL engine has for ends."""
    assert isinstance(store.engine, PostgresEngine)
    return sum(1 for listener in store.engine._listeners if listener._notices is not None)


async def test_a_thousand_waits_share_one_listener(
    store: jobtable.Store,
    engine: str,
    runner: jobtable.Runner,
    waiters: Waiters,
    wait_until: WaitUntil,
) -> None:
    ids = resize.enqueue_many(store, [Size(width=i) for i in range(1000)])
    tasks = [asyncio.create_task(resize.await_result(store, i, timeout=120)) for i in ids]
    await wait_until(lambda: len(waiters) == 1000 and waiters.listening, limit=60)
    if engine == "postgres":
        assert listeners_of_ends(store) == 1
    await runner.start()
    results = await asyncio.gather(*tasks)
    assert results == [Size(width=2 * i) for i in range(1000)]
    assert len(waiters) == 0


@pytest.mark.slow
async def test_a_waiter_in_another_process_is_woken_by_the_outcomes_commit(
    store: jobtable.Store, store_target: str, runner: jobtable.Runner
) -> None:
    job_id = resize.enqueue(store, Size(width=21))
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(WAITER), store_target, job_id, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        assert await asyncio.wait_for(process.stdout.readline(), 90) == b"ready\n"
        await runner.start()
        line = await asyncio.wait_for(process.stdout.readline(), 90)
        assert await asyncio.wait_for(process.wait(), 90) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert Size.model_validate_json(line) == Size(width=42)


async def test_the_finish_statement_notifies_only_while_a_process_waits(
    pg_url: str, wait_until: WaitUntil
) -> None:
    with jobtable.Store.open(pg_url) as store, psycopg.connect(pg_url, autocommit=True) as raw:
        (channel,) = raw.execute("SELECT 'jobtable-ended:' || md5(current_schema())").fetchall()[0]
        raw.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(resize)
        async def double(ctx: jobtable.JobContext[Size], payload: Size) -> Size:
            return Size(width=payload.width * 2)

        unwaited = resize.enqueue(store, Size(width=1))
        await runner.start()
        try:
            await wait_until(lambda: store.get(unwaited).status is jobtable.Status.SUCCEEDED)
            # Notifications arrive in commit order: the first one is the finish's, if it sent one.
            raw.execute("SELECT pg_notify(%s, 'after the unwaited job')", [channel])
            assert next(raw.notifies(timeout=30)).payload == "after the unwaited job"

            # A wait for a job of a queue no runner works: this process now waits.
            idle = resize.enqueue(store, Size(width=0), queue="idle")
            holding = asyncio.create_task(resize.await_result(store, idle))
            waiters = waiters_of(store, store.engine)
            await wait_until(lambda: len(waiters) == 1 and waiters.listening)
            waited = resize.enqueue(store, Size(width=2))
            assert await resize.await_result(store, waited, timeout=60) == Size(width=4)
            payloads = [n.payload for n in raw.notifies(timeout=30, stop_after=1)]
            assert payloads == [waited]
            holding.cancel()
        finally:
            runner.stop()
            await runner.wait()


def test_an_interrupted_sync_wait_unregisters_itself(
    store: jobtable.Store, waiters: Waiters
) -> None:
    job_id = resize.enqueue(store, Size(width=1))

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def ctrl_c_once_registered() -> None:
        while len(waiters) == 0:
            time.sleep(0.01)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, interrupt)
    presser = threading.Thread(target=ctrl_c_once_registered)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            resize.wait(store, job_id, timeout=60)
    finally:
        presser.join()
        signal.signal(signal.SIGUSR1, previous)
    assert len(waiters) == 0
    assert store.get(job_id).status is jobtable.Status.QUEUED


async def test_the_fallback_poll_sees_a_job_deleted_while_waited_for(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    # A delete notifies no one on PostgreSQL: only the poll finds the job gone.
    waiters.poll = 0.05
    job_id = resize.enqueue(store, Size(width=1))
    waiting = asyncio.create_task(resize.await_result(store, job_id, timeout=60))
    await wait_until(lambda: len(waiters) == 1 and waiters.listening)
    store.delete(job_id)
    with pytest.raises(jobtable.JobNotFound, match=job_id):
        await waiting
    assert len(waiters) == 0


async def test_the_listener_stops_when_no_one_waits_and_a_new_wait_starts_it_again(
    store: jobtable.Store, runner: jobtable.Runner, waiters: Waiters, wait_until: WaitUntil
) -> None:
    waiters.poll = 0.01  # IDLE_POLLS of them without a wait end the thread
    job_id = resize.enqueue(store, Size(width=1))
    waiting = asyncio.create_task(resize.await_result(store, job_id, timeout=60))
    await wait_until(lambda: len(waiters) == 1 and waiters.listening)
    store.cancel(job_id)
    with pytest.raises(jobtable.JobCancelled):
        await waiting
    await wait_until(lambda: not waiters.listening)
    if isinstance(store.engine, PostgresEngine):
        assert listeners_of_ends(store) == 0
    again = asyncio.create_task(resize.await_result(store, resize.enqueue(store, Size(width=5))))
    await wait_until(lambda: waiters.listening)
    await runner.start()
    assert await again == Size(width=10)


def claim_as(store: jobtable.Store, runner: str) -> list[str]:
    """Claims the default queue's jobs for a runner not running here: a process that died."""

    def claim(q: Queries) -> list[str]:
        claimed = q.finish_and_claim_jobs(
            outcomes=[], queue="default", runner=runner, now=now(), max_jobs=10
        )[1]
        return [row.id for row in claimed]

    return store.engine.write(claim)


async def wait_registered(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil, job_id: str
) -> "asyncio.Task[Size]":
    """A task awaiting job_id's result, returned once its wait listens for ends."""
    waiting = asyncio.create_task(resize.await_result(store, job_id, timeout=60))
    await wait_until(lambda: len(waiters) == 1 and waiters.listening)
    return waiting


async def test_a_dependent_cancelled_by_its_dependencys_failure_wakes_its_wait(
    store: jobtable.Store, runner: jobtable.Runner, waiters: Waiters, wait_until: WaitUntil
) -> None:
    wf = jobtable.Workflow("declined")
    paid = wf.add(charge, -1)
    shipped = wf.add(resize, Size(width=1), after=[paid])
    wf.enqueue(store)
    waiting = await wait_registered(store, waiters, wait_until, shipped.id)
    await runner.start()
    with pytest.raises(jobtable.JobCancelled):
        await waiting


async def test_a_dependent_cancelled_with_its_dependency_wakes_its_wait(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    wf = jobtable.Workflow("called off")
    first = wf.add(resize, Size(width=1))
    then = wf.add(resize, Size(width=2), after=[first])
    wf.enqueue(store)
    waiting = await wait_registered(store, waiters, wait_until, then.id)
    store.cancel(first.id)
    with pytest.raises(jobtable.JobCancelled):
        await waiting


async def test_a_job_cancel_workflow_cancels_wakes_its_wait(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    wf = jobtable.Workflow("called off")
    first = wf.add(resize, Size(width=1))
    wf.add(resize, Size(width=2), after=[first])
    wf.enqueue(store)
    waiting = await wait_registered(store, waiters, wait_until, first.id)
    assert store.cancel_workflow(wf.id) == 2
    with pytest.raises(jobtable.JobCancelled):
        await waiting


async def test_a_job_cancelled_in_bulk_wakes_its_wait(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=1))
    waiting = await wait_registered(store, waiters, wait_until, job_id)
    assert store.cancel_matching(kind="resize").cancelled == 1
    with pytest.raises(jobtable.JobCancelled):
        await waiting


async def test_a_job_deleted_in_bulk_wakes_its_wait(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=1))
    waiting = await wait_registered(store, waiters, wait_until, job_id)
    assert store.delete_matching(kind="resize") == 1
    with pytest.raises(jobtable.JobNotFound, match=job_id):
        await waiting


async def test_a_job_failed_as_interrupted_wakes_its_wait(
    store: jobtable.Store, waiters: Waiters, wait_until: WaitUntil
) -> None:
    job_id = resize.enqueue(store, Size(width=1))
    assert claim_as(store, "gone") == [job_id]
    waiting = await wait_registered(store, waiters, wait_until, job_id)
    successor = jobtable.Runner(store, workers=1, name="gone")
    successor.handler(resize)(lambda ctx, payload: payload)
    await successor.start()  # fails the jobs its predecessor left running
    try:
        with pytest.raises(jobtable.JobFailed, match=jobtable.MESSAGE_INTERRUPTED):
            await waiting
    finally:
        successor.stop()
        await successor.wait()
