"""A worker that finishes while another one claims stores its outcome with a claim, not alone.

A claim is held up by a lock another connection holds on the jobs (SQLite:
the write lock; PostgreSQL: the table), so the second worker's handler
returns while the first worker's claim is under way, whatever the machine's
speed. The outcome and the claim that follows share one statement, so the
job's ``finished_at`` is the next job's ``started_at``.
"""

import asyncio
import contextlib
import pathlib
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import jobtable

LIMIT = 30.0
"""Seconds any wait of the test may take before it fails."""

RUNNING = jobtable.Status.RUNNING


@contextlib.contextmanager
def jobs_locked(engine: str, target: str) -> Iterator[None]:
    """Holds every write to the jobs table off until the block ends."""
    conn: Any
    if engine == "postgres":
        import psycopg

        conn = psycopg.connect(target)
        conn.execute("LOCK TABLE jobs IN SHARE MODE")
    else:
        conn = sqlite3.connect(pathlib.Path(target), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        if engine == "postgres":
            conn.commit()
        else:
            conn.execute("COMMIT")
        conn.close()


async def test_an_outcome_ready_while_another_worker_claims_rides_on_the_next_claim(
    store: jobtable.Store,
    engine: str,
    store_target: str,
    wait_until: Callable[..., Awaitable[None]],
    finished: Callable[[jobtable.Runner, list[str]], Callable[[], bool]],
) -> None:
    runner = jobtable.Runner(store, workers=2)
    gates = [threading.Event() for _ in range(4)]
    for gate in gates[2:]:
        gate.set()

    def work(ctx: jobtable.JobContext[int], payload: int) -> int:
        assert gates[payload].wait(LIMIT)
        return payload

    kind = runner.register("work", work)
    ids = [kind.enqueue(n) for n in range(4)]
    ended = {job_id: asyncio.Event() for job_id in ids}
    runner.hooks.on_outcome(lambda outcome: ended[outcome.id].set())
    await runner.start()
    try:
        await wait_until(lambda: all(runner.get(i).status is RUNNING for i in ids[:2]))
        with jobs_locked(engine, store_target):
            # The first worker's outcome goes with its claim, which waits for the lock.
            gates[0].set()
            await asyncio.wait_for(ended[ids[0]].wait(), LIMIT)
            await asyncio.sleep(0.05)
            # The second one finishes while that claim is under way.
            gates[1].set()
            await asyncio.wait_for(ended[ids[1]].wait(), LIMIT)
            await asyncio.sleep(0.05)
        await wait_until(finished(runner, ids))
    finally:
        runner.stop()
        await runner.wait()
    jobs = [store.inspect(job_id) for job_id in ids]
    assert all(job.status is jobtable.Status.SUCCEEDED for job in jobs)
    assert jobs[0].finished_at == jobs[2].started_at
    assert jobs[1].finished_at == jobs[3].started_at


async def test_an_outcome_ready_while_the_claimer_waits_for_jobs_is_stored_at_once(
    store: jobtable.Store,
    wait_until: Callable[..., Awaitable[None]],
    finished: Callable[[jobtable.Runner, list[str]], Callable[[], bool]],
) -> None:
    # One job for two workers: the other worker claims next, finds nothing
    # and waits for jobs, up to a poll interval longer than the test.
    runner = jobtable.Runner(store, workers=2, poll_interval=3600)
    gate = threading.Event()

    def work(ctx: jobtable.JobContext[int], payload: int) -> int:
        assert gate.wait(LIMIT)
        return payload

    job_id = runner.register("work", work).enqueue(1)
    await runner.start()
    try:
        await wait_until(lambda: runner.get(job_id).status is RUNNING)
        await asyncio.sleep(0.1)
        gate.set()
        await wait_until(finished(runner, [job_id]), limit=LIMIT / 3)
    finally:
        runner.stop()
        await runner.wait()
