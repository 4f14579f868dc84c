"""An operator's delete that releases a held job wakes a runner: it need not wait for its poll.

A job of a sequence waits while an earlier job of its key that failed
blocks it. Deleting that job is what releases it, and the delete's
transaction wakes idle runners (on PostgreSQL a notice at commit; SQLite's
runners watch the file): the runner here never polls, so one that waited
for its poll would time out.
"""

import asyncio
import contextlib
import datetime
import sqlite3
import threading
from collections.abc import Awaitable, Callable

import pytest

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
NEVER = 3600.0
"""A poll interval no test waits for."""
STEP = jobtable.Kind("step", int, int, queue="q")


def delete_one(store: jobtable.Store, job_id: str) -> None:
    assert store.delete(job_id) is jobtable.DeleteResult.DELETED


def delete_many(store: jobtable.Store, job_id: str) -> None:
    assert store.delete_many([job_id]) == {job_id: jobtable.DeleteResult.DELETED}


def delete_matching(store: jobtable.Store, job_id: str) -> None:
    assert store.delete_matching(status="failed") == 1


@pytest.mark.parametrize(
    "delete", [delete_one, delete_many, delete_matching], ids=["delete", "many", "matching"]
)
async def test_deleting_the_failed_job_that_blocks_a_sequence_starts_the_next_at_once(
    store: jobtable.Store, wait_until: WaitUntil, delete: Callable[[jobtable.Store, str], None]
) -> None:
    first, second = STEP.enqueue_many(store, [1, 2], sequence_key="s")
    runner = jobtable.Runner(store, queues={"q": 2}, poll_interval=NEVER)

    @runner.handler(STEP)
    def step(ctx: jobtable.JobContext[int], n: int) -> int:
        if n == 1:
            raise jobtable.Failure("first fails")
        return n

    await runner.start()
    try:
        await wait_until(lambda: store.get(first).status is jobtable.Status.FAILED)
        assert store.inspect(second).waiting is not None  # held by the failed first
        delete(store, first)
        await wait_until(lambda: store.get(second).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        runner.stop()
        await runner.wait()


HELD = jobtable.Kind(
    "held", int, int, queue="paused", sequence=jobtable.Sequence(on_failure="continue")
)
"""A job in a paused queue that no runner serves: it holds its sequence while it waits."""
NEXT = jobtable.Kind("next", int, int, queue="q", sequence=jobtable.Sequence(on_failure="continue"))
"""The job its sequence holds: a sequence spans kinds and queues."""


def cancel_one(store: jobtable.Store, job_id: str) -> None:
    assert store.cancel(job_id) is jobtable.CancelResult.CANCELLED


def cancel_many(store: jobtable.Store, job_id: str) -> None:
    assert store.cancel_many([job_id]) == {job_id: jobtable.CancelResult.CANCELLED}


def cancel_matching(store: jobtable.Store, job_id: str) -> None:
    assert store.cancel_matching(kind="held").cancelled == 1


def cancel_workflow(store: jobtable.Store, job_id: str) -> None:
    workflow_id = store.inspect(job_id).workflow_id
    assert workflow_id is not None
    assert store.cancel_workflow(workflow_id) == 1


async def next_starts_once(
    store: jobtable.Store, wait_until: WaitUntil, release: Callable[[], None], following: str
) -> None:
    """Starts a runner of q that never polls, then releases: following must succeed."""
    runner = jobtable.Runner(store, queues={"q": 1}, poll_interval=NEVER)
    runner.handler(NEXT)(lambda ctx, n: n)
    await runner.start()
    try:
        await asyncio.sleep(0.3)  # the runner found nothing to claim and waits
        assert store.get(following).status is jobtable.Status.QUEUED
        release()
        await wait_until(lambda: store.get(following).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        runner.stop()
        await runner.wait()


@pytest.mark.parametrize(
    "cancel",
    [cancel_one, cancel_many, cancel_matching, cancel_workflow],
    ids=["cancel", "many", "matching", "workflow"],
)
async def test_cancelling_the_queued_job_that_holds_a_continuing_sequence_starts_the_next(
    store: jobtable.Store, wait_until: WaitUntil, cancel: Callable[[jobtable.Store, str], None]
) -> None:
    store.pause("paused")
    wf = jobtable.Workflow("held")
    first = wf.add(HELD, 1, sequence_key="s").id
    wf.enqueue(store)
    following = NEXT.enqueue(store, 2, sequence_key="s")
    await next_starts_once(store, wait_until, lambda: cancel(store, first), following)


async def test_pruning_the_failed_job_that_blocks_a_sequence_starts_the_next(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    first, following = STEP.enqueue_many(store, [1, 2], sequence_key="s")
    runner = jobtable.Runner(store, queues={"q": 1}, poll_interval=NEVER)
    runner.handler(STEP)(lambda ctx, n: n)
    failing = jobtable.Runner(store, queues={"q": 1}, poll_interval=NEVER)

    @failing.handler(STEP)
    def step(ctx: jobtable.JobContext[int], n: int) -> int:
        raise jobtable.Failure("first fails")

    assert await failing.run_next() == first
    assert store.get(first).status is jobtable.Status.FAILED
    await runner.start()
    try:
        await asyncio.sleep(0.3)
        assert store.get(following).status is jobtable.Status.QUEUED
        assert store.prune(datetime.timedelta(0)) == 1
        await wait_until(lambda: store.get(following).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        runner.stop()
        await runner.wait()


async def test_interrupting_a_dead_runners_job_wakes_the_runners_that_can_take_it(
    store: jobtable.Store, wait_until: WaitUntil, store_target: str, engine: str
) -> None:
    # A runner holds the queue's one slot, then dies (its row is gone): a
    # starting runner's maintenance interrupts its job, which goes back to
    # the queue, and the idle runner of the queue takes it at once.
    store.set_limits("q", concurrency=1)
    job = STEP.enqueue(store, 1, max_attempts=2)
    ghost = Ghost(store_target, engine)
    ghost.claims(job)
    runner = jobtable.Runner(store, queues={"q": 1}, poll_interval=NEVER)
    runner.handler(STEP)(lambda ctx, n: n)
    other = jobtable.Runner(store, queues={"other": 1}, poll_interval=NEVER, name="maintainer")
    other.handler(jobtable.Kind("unused", int, int, queue="other"))(lambda ctx, n: n)
    await runner.start()
    try:
        await asyncio.sleep(0.3)
        assert store.get(job).status is jobtable.Status.RUNNING
        ghost.dies()
        await other.start()  # interrupts the jobs of runners that have no row
        await wait_until(lambda: store.get(job).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        other.stop()
        runner.stop()
        await other.wait()
        await runner.wait()


class Ghost:
    """A runner that claims a job through SQL, then dies: its row goes."""

    def __init__(self, store_target: str, engine: str) -> None:
        self.target, self.engine = store_target, engine

    def _run(self, sql: str, *args: str) -> None:
        if self.engine == "sqlite":
            with contextlib.closing(sqlite3.connect(self.target)) as conn, conn:
                conn.execute(sql.replace("%s", "?"), args)
        else:
            import psycopg

            with psycopg.connect(self.target) as pg:
                pg.execute(sql, args)

    def claims(self, job_id: str) -> None:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._run(
            "INSERT INTO runners (name, started_at, heartbeat_at) VALUES ('ghost', %s, %s)",
            now,
            now,
        )
        self._run(
            "UPDATE jobs SET status = 'running', runner = 'ghost', attempt = 1 WHERE id = %s",
            job_id,
        )

    def dies(self) -> None:
        self._run("DELETE FROM runners WHERE name = 'ghost'")


FAILS = jobtable.Kind("fails", int, int, queue="a")


async def test_a_dependency_that_fails_cancels_a_sequenced_dependent_and_frees_its_sequence(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    # The dependent, pending in a sequence that continues past failures,
    # holds the job behind it; the failure that cancels it releases that job,
    # which the idle runner of its queue starts at once.
    wf = jobtable.Workflow("doomed")
    wf.add(NEXT, 1, after=[wf.add(FAILS, 0)], sequence_key="s")
    wf.enqueue(store)
    following = NEXT.enqueue(store, 2, sequence_key="s")
    failing = jobtable.Runner(store, queues={"a": 1}, poll_interval=NEVER, name="failing")

    @failing.handler(FAILS)
    def fail(ctx: jobtable.JobContext[int], n: int) -> int:
        raise jobtable.Failure("the dependency fails")

    runner = jobtable.Runner(store, queues={"q": 1}, poll_interval=NEVER)
    runner.handler(NEXT)(lambda ctx, n: n)
    await runner.start()
    try:
        await asyncio.sleep(0.3)  # the runner found nothing to claim and waits
        assert store.get(following).status is jobtable.Status.QUEUED
        assert await failing.run_next() is not None
        await wait_until(lambda: store.get(following).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        runner.stop()
        await runner.wait()


async def test_a_runner_that_declares_a_raised_limit_wakes_the_runners_it_lets_through(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    # A runner of newer code declares the queue's concurrency raised: the
    # runner of older code, idle behind the old limit, starts the job the new
    # limit lets through at once. The new runner serves another queue, so it
    # cannot take that job itself (it would fail it: it has no handler).
    gate = threading.Event()

    def step(ctx: jobtable.JobContext[int], n: int) -> int:
        if n == 1:
            gate.wait(30)
        return n

    first, following = STEP.enqueue_many(store, [1, 2])
    old = jobtable.Runner(
        store, queues={"q": 2}, poll_interval=NEVER, flow=[jobtable.Queue("q", concurrency=1)]
    )
    old.handler(STEP)(step)
    new = jobtable.Runner(
        store,
        queues={"other": 1},
        poll_interval=NEVER,
        flow=[jobtable.Queue("q", concurrency=2)],
        name="new",
    )
    new.handler(jobtable.Kind("other", int, int, queue="other"))(lambda ctx, n: n)
    await old.start()
    try:
        await wait_until(lambda: store.get(first).status is jobtable.Status.RUNNING)
        await asyncio.sleep(0.3)  # the old runner waits behind the limit
        assert store.get(following).status is jobtable.Status.QUEUED
        await new.start()
        await wait_until(lambda: store.get(following).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        gate.set()
        new.stop()
        old.stop()
        await new.wait()
        await old.wait()
