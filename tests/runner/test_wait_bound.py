"""Every wait returns within a bound of its job's end, whatever ended it, in a busy process.

Each test keeps the process busy as a web process is: an enqueue_and_wait
every 0.1 s beside the wait under test, so the waits' registry is woken
again and again by notifications and new waits. The job waited for is then
ended by something other than its own outcome: its dependency's failure,
cancel_workflow, the interruption of a dead runner's job, or a plain UPDATE
from another program that no notification tells of (only the poll sees
that one). The wait must return well within a generous margin of the
stated bound (the registry's poll, 1 s), and without the busy stream
stopping first. The stores are
SQLite (its file watch), SQLite without a watch (polling only, as where the
file system cannot tell) and PostgreSQL (LISTEN/NOTIFY).
"""

import asyncio
import contextlib
import pathlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator

import psycopg
import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._values import now
from jobtable._wait.waiters import POLL

MARGIN = 10.0
"""Seconds a wait may take after its job ended: the 1 s bound, with room for a loaded machine."""

STORES = [
    "sqlite",
    "sqlite polling only",
    pytest.param("postgres", marks=pytest.mark.postgres),
]

busy = jobtable.Kind("busy", int, int)
gated = jobtable.Kind("gated", int, int)
step = jobtable.Kind("step", int, int)
orphan = jobtable.Kind("orphan", int, int, queue="orphans")


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[jobtable.Store]:
    """A fresh store of each kind, closed after the test."""
    path = tmp_path / "jobs.db"
    if request.param == "postgres":
        opened = jobtable.Store.open(request.getfixturevalue("pg_url"))
    elif request.param == "sqlite":
        opened = jobtable.Store.open(path)
    else:
        opened = jobtable.Store(SQLiteEngine.open(path, watch=False), target=str(path))
    with opened:
        yield opened


@pytest.fixture
def gate() -> asyncio.Event:
    """Set to let the gated jobs end: each fails once it is set."""
    return asyncio.Event()


@pytest.fixture
async def runner(store: jobtable.Store, gate: asyncio.Event) -> AsyncIterator[jobtable.Runner]:
    """A started runner: busy doubles its payload, gated fails once the gate opens."""
    runner = jobtable.Runner(store, workers=4, name="live")

    @runner.handler(busy)
    async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload * 2

    @runner.handler(gated)
    async def fail_once_open(ctx: jobtable.JobContext[int], payload: int) -> int:
        await gate.wait()
        raise jobtable.Failure("the gate opened")

    await runner.start()
    yield runner
    runner.stop()
    await runner.wait()


class Traffic:
    """What the busy stream did: requests started, and answered with the right result."""

    def __init__(self) -> None:
        self.started = 0
        self.answered = 0
        self.changed = asyncio.Condition()

    async def answer(self) -> None:
        """Counts one more request answered."""
        async with self.changed:
            self.answered += 1
            self.changed.notify_all()

    async def answers(self, count: int) -> None:
        """Waits until count more requests were answered."""
        target = self.answered + count
        async with asyncio.timeout(60), self.changed:
            await self.changed.wait_for(lambda: self.answered >= target)


@contextlib.asynccontextmanager
async def busy_process(store: jobtable.Store) -> AsyncIterator[Traffic]:
    """Starts a request (an enqueue_and_wait) every 0.1 s, as a web process would, until the end.

    Requests do not wait for each other: a new wait comes every 0.1 s, and
    every answered request's end notifies.
    """
    traffic = Traffic()
    requests: set[asyncio.Task[None]] = set()

    async def request(n: int) -> None:
        assert await busy.aenqueue_and_wait(store, n, wait_timeout=60) == 2 * n
        await traffic.answer()

    async def stream() -> None:
        while True:
            task = asyncio.create_task(request(traffic.started))
            requests.add(task)
            task.add_done_callback(requests.discard)
            traffic.started += 1
            await asyncio.sleep(0.1)

    streaming = asyncio.create_task(stream())
    try:
        yield traffic
    finally:
        streaming.cancel()
        for task in list(requests):
            task.cancel()
        await asyncio.gather(streaming, *requests, return_exceptions=True)


async def assert_cancelled_within_bound(
    store: jobtable.Store, job_id: str, end: Callable[[], object], traffic: Traffic
) -> None:
    """Waits for job_id, ends it with end() while the process is busy, expects JobCancelled."""
    waiting = asyncio.create_task(step.await_result(store, job_id))
    await traffic.answers(3)
    assert not waiting.done()
    end()
    with pytest.raises(jobtable.JobCancelled):
        await asyncio.wait_for(waiting, MARGIN)


def test_the_stated_bound_is_the_poll() -> None:
    assert POLL == 1.0


async def test_a_dependent_cancelled_by_its_dependencys_failure_is_seen_at_once(
    store: jobtable.Store, runner: jobtable.Runner, gate: asyncio.Event
) -> None:
    wf = jobtable.Workflow("doomed")
    failing = wf.add(gated, 1)
    dependent = wf.add(step, 2, after=[failing])
    grandchild = wf.add(step, 3, after=[dependent])
    wf.enqueue(store)
    async with busy_process(store) as traffic:
        waiting = asyncio.create_task(step.await_result(store, grandchild.id))
        await assert_cancelled_within_bound(store, dependent.id, gate.set, traffic)
        with pytest.raises(jobtable.JobCancelled):
            await asyncio.wait_for(waiting, MARGIN)
    assert store.get(failing.id).status is jobtable.Status.FAILED


async def test_a_job_cancelled_by_cancel_workflow_is_seen_at_once(
    store: jobtable.Store, runner: jobtable.Runner
) -> None:
    wf = jobtable.Workflow("called off")
    first = wf.add(step, 1, queue="nobody")
    second = wf.add(step, 2, after=[first])
    wf.enqueue(store)
    async with busy_process(store) as traffic:
        await assert_cancelled_within_bound(
            store, second.id, lambda: store.cancel_workflow(wf.id), traffic
        )
    assert store.get(first.id).status is jobtable.Status.CANCELLED


def claim_as(store: jobtable.Store, runner: str, queue: str) -> list[str]:
    """Claims queue's jobs for a runner that is not running here: a process that died."""

    def claim(q: Queries) -> list[str]:
        claimed = q.finish_and_claim_jobs(
            outcomes=[], queue=queue, runner=runner, now=now(), max_jobs=10
        )[1]
        return [row.id for row in claimed]

    return store.engine.write(claim)


async def test_a_job_failed_by_maintenance_as_interrupted_is_seen_at_once(
    store: jobtable.Store, runner: jobtable.Runner
) -> None:
    job_id = orphan.enqueue(store, 1)
    assert claim_as(store, "died", "orphans") == [job_id]
    async with busy_process(store) as traffic:
        waiting = asyncio.create_task(orphan.await_result(store, job_id))
        await traffic.answers(3)
        assert not waiting.done()
        # A runner that starts under the dead one's name fails its jobs at
        # once, as the next round of any runner's maintenance would a lease later.
        successor = jobtable.Runner(store, name="died", queues={"orphans": 1})
        successor.handler(orphan)(lambda ctx, n: n)
        await successor.start()
        try:
            with pytest.raises(jobtable.JobFailed, match=jobtable.MESSAGE_INTERRUPTED):
                await asyncio.wait_for(waiting, MARGIN)
        finally:
            successor.stop()
            await successor.wait()


def cancel_behind_jobtables_back(store: jobtable.Store, job_id: str) -> None:
    """Cancels job_id with a plain UPDATE on a connection of its own, which notifies no one."""
    if isinstance(store.engine, SQLiteEngine):
        with contextlib.closing(sqlite3.connect(store.engine.path)) as conn, conn:
            conn.execute("UPDATE jobs SET status = 'cancelled' WHERE id = ?", [job_id])
    else:
        assert isinstance(store.engine, PostgresEngine)
        with psycopg.connect(store.engine._url) as pg:
            pg.execute("UPDATE jobs SET status = 'cancelled' WHERE id = %s", [job_id])


async def test_an_end_no_notification_tells_of_is_seen_within_the_poll(
    store: jobtable.Store, runner: jobtable.Runner
) -> None:
    job_id = step.enqueue(store, 1, queue="nobody")
    async with busy_process(store) as traffic:
        await assert_cancelled_within_bound(
            store, job_id, lambda: cancel_behind_jobtables_back(store, job_id), traffic
        )
