"""A heartbeat or a claim delayed past the lease fails nothing, and maintenance never deadlocks.

The maintenance step (heartbeat, failing dead runners' jobs, pruning) takes
every time it uses from one reading of the clock, so a step that waits for a
lock compares its heartbeat with a cutoff of the same moment, and a runner
never counts itself dead. Nor does it take the job of a claim of its own
that committed a lease after its stamp, its reply not yet back, for a claim
whose reply was lost: on PostgreSQL a claim waits for a row lock while the
heartbeats go on; on SQLite, whose one write lock would hold the heartbeats
too, the event loop stalls while the claim waits, as in a stopped process.
On PostgreSQL two runners' steps skip the rows the other holds, so they
never deadlock deleting each other's rows.
"""

import asyncio
import contextlib
import datetime
import functools
import logging
import os
import pathlib
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable

import psycopg
import pytest
from psycopg.rows import TupleRow

import jobtable
from jobtable._engines.base import Queries
from jobtable._values import now, timestamp

WaitUntil = Callable[..., Awaitable[None]]

LEASE = 1.0
"""The lease of the tests' runners, in seconds."""


def register(q: Queries, *, name: str, now: str) -> None:
    q.register_runner(name=name, now=now, host=None, process=None)


def heartbeat_of(store: jobtable.Store, name: str) -> datetime.datetime | None:
    row = store.engine.read(lambda q: q.get_runner(name=name, now=now(), lease=LEASE))
    return None if row is None else row.heartbeat_at


async def wait_for_heartbeats(
    store: jobtable.Store, name: str, count: int, wait_until: WaitUntil
) -> None:
    """Waits until runner name has renewed its lease count more times."""
    seen = {heartbeat_of(store, name)}

    def renewed() -> bool:
        seen.add(heartbeat_of(store, name))
        return len(seen) > count

    await wait_until(renewed, limit=60)


async def test_a_heartbeat_held_up_past_the_lease_does_not_fail_the_runners_own_job(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    release = asyncio.Event()

    async def hold(ctx: jobtable.JobContext[int], payload: int) -> int:
        await release.wait()
        return payload

    with jobtable.Store.open(pg_url) as store:
        runner = jobtable.Runner(store, name="a", workers=1, lease=LEASE)
        job_id = runner.register("hold", hold).enqueue(1)
        await runner.start()
        try:
            await wait_until(lambda: runner.get(job_id).status is jobtable.Status.RUNNING)
            # Four renewals, a third of the lease apart, span more than a
            # lease of prompt writes: the step held up below may judge
            # (StoreContact), so only its one clock reading and never
            # counting itself dead keep it from failing its own job.
            await wait_for_heartbeats(store, "a", 4, wait_until)
            # Another session holds the runners table for longer than the
            # lease: the runner's heartbeat waits for it.
            with psycopg.connect(pg_url) as locker:
                locker.execute("LOCK TABLE runners IN ACCESS EXCLUSIVE MODE")
                await asyncio.sleep(3.5 * LEASE)
                locker.rollback()
            await wait_for_heartbeats(store, "a", 3, wait_until)
            assert runner.get(job_id).status is jobtable.Status.RUNNING
            release.set()
            await wait_until(lambda: runner.get(job_id).status is jobtable.Status.SUCCEEDED)
        finally:
            release.set()
            runner.stop()
            await runner.wait()
    assert not [r for r in caplog.records if "dead runners" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def blocked_by(conn: psycopg.Connection[TupleRow]) -> Callable[[], bool]:
    """A check that some session waits for a lock conn's session holds."""

    def check() -> bool:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (conn.info.backend_pid,),
        ).fetchone()
        return row is not None and row[0] > 0

    return check


async def run_a_claim_held_past_the_lease(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture, *, max_attempts: int
) -> tuple[jobtable.Job, int, int]:
    """Has a one-worker runner's claim commit 1.5 leases after its stamp, its heartbeat between.

    The claim (job first's outcome, and job second) waits for first's row,
    which another session locks; the heartbeat asked for 1.5 leases after
    the claim's stamp, while its reply is still out, waits for the runner's
    row, which a third session locks until the claim has committed. So the
    heartbeat reads what it holds before the claim's reply, and the running
    jobs after its commit. Returns second once finished, its attempt, and
    how often its handler ran.
    """
    caplog.set_level(logging.INFO, logger="jobtable")
    gates = [asyncio.Event(), asyncio.Event()]
    runs = [0, 0]

    async def hold(ctx: jobtable.JobContext[int], which: int) -> int:
        runs[which] += 1
        await gates[which].wait()
        return which

    with jobtable.Store.open(pg_url) as store:
        runner = jobtable.Runner(store, name="a", workers=1, lease=LEASE)
        kind = runner.register("hold", hold)
        first = kind.enqueue(0)
        await runner.start()
        try:
            await wait_until(lambda: runs[0] == 1)
            second = kind.enqueue(1, max_attempts=max_attempts)
            # More than a lease of prompt writes: the heartbeat may judge (StoreContact).
            await wait_for_heartbeats(store, "a", 4, wait_until)
            with psycopg.connect(pg_url) as job_lock, psycopg.connect(pg_url) as runner_lock:
                job_lock.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (first,))
                gates[0].set()
                await wait_until(blocked_by(job_lock))
                await asyncio.sleep(1.5 * LEASE)
                runner_lock.execute("SELECT 1 FROM runners WHERE name = 'a' FOR UPDATE")
                await wait_until(blocked_by(runner_lock))
                job_lock.rollback()
                await wait_until(lambda: runs[1] == 1)
                beat = heartbeat_of(store, "a")
                runner_lock.rollback()
                await wait_until(lambda: heartbeat_of(store, "a") != beat)
            gates[1].set()
            ended = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED)
            await wait_until(lambda: runner.get(second).status in ended)
        finally:
            for gate in gates:
                gate.set()
            runner.stop()
            await runner.wait()
        with psycopg.connect(pg_url) as conn:
            row = conn.execute("SELECT attempt FROM jobs WHERE id = %s", (second,)).fetchone()
        assert row is not None
        return runner.get(second), row[0], runs[1]


async def test_a_claim_that_commits_a_lease_after_its_stamp_runs_its_job_once(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    job, attempt, runs = await run_a_claim_held_past_the_lease(
        pg_url, wait_until, caplog, max_attempts=2
    )
    assert (job.status, job.result, attempt, runs) == (jobtable.Status.SUCCEEDED, 1, 1, 1)
    assert not [r for r in caplog.records if "never received" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_last_attempt_whose_claim_commits_a_lease_after_its_stamp_succeeds(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    job, _, runs = await run_a_claim_held_past_the_lease(pg_url, wait_until, caplog, max_attempts=1)
    assert (job.status, job.error, job.result, runs) == (jobtable.Status.SUCCEEDED, None, 1, 1)


async def run_a_claim_held_past_a_stalled_loop(
    path: pathlib.Path,
    wait_until: WaitUntil,
    caplog: pytest.LogCaptureFixture,
    *,
    max_attempts: int,
) -> tuple[jobtable.Job, int, int]:
    """Has a one-worker SQLite runner's claim commit 1.2 leases late, its heartbeat between.

    The claim (job first's outcome, and job second) waits for the file's
    write lock, which another connection holds, while the event loop is
    blocked for 1.2 leases, as in a process stopped that long. The
    heartbeat then due reads what the runner holds before the claim's
    reply, and its write, queued behind the claim, runs after the claim
    commits. Returns second once finished, its attempt, and how often its
    handler ran.
    """
    caplog.set_level(logging.INFO, logger="jobtable")
    lease = 1.5
    gates = [asyncio.Event(), asyncio.Event()]
    runs = [0, 0]

    async def hold(ctx: jobtable.JobContext[int], which: int) -> int:
        runs[which] += 1
        await gates[which].wait()
        return which

    with jobtable.Store.open(os.fspath(path)) as store:
        # No poll within the test: a claim is one write, with no staging before it.
        runner = jobtable.Runner(store, name="a", workers=1, lease=lease, poll_interval=3600)
        kind = runner.register("hold", hold)
        kind.enqueue(0)
        await runner.start()
        try:
            await wait_until(lambda: runs[0] == 1)
            second = kind.enqueue(1, max_attempts=max_attempts)
            # More than a lease of prompt writes: the heartbeat may judge
            # (StoreContact). The last one just landed: none is due for a
            # third of the lease.
            await wait_for_heartbeats(store, "a", 5, wait_until)
            locker = sqlite3.connect(path, isolation_level=None)
            try:
                locker.execute("BEGIN IMMEDIATE")
                gates[0].set()
                await wait_until(lambda: runner._producers[0]._claiming)
                # The event loop stalls, as in a stopped process; the claim waits for the lock.
                time.sleep(1.2 * lease)  # noqa: ASYNC251 (the stall under test)
                # The heartbeat due now asks for its write, behind the claim's.
                await asyncio.sleep(lease / 15)
                locker.execute("COMMIT")
            finally:
                locker.close()
            await wait_until(lambda: runs[1] >= 1)
            beat = heartbeat_of(store, "a")
            await wait_until(lambda: heartbeat_of(store, "a") != beat)
            gates[1].set()
            ended = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED)
            await wait_until(lambda: runner.get(second).status in ended)
        finally:
            for gate in gates:
                gate.set()
            runner.stop()
            await runner.wait()
        with contextlib.closing(sqlite3.connect(path)) as conn:
            row = conn.execute("SELECT attempt FROM jobs WHERE id = ?", (second,)).fetchone()
        return runner.get(second), row[0], runs[1]


async def test_a_claim_that_commits_a_lease_after_its_stamp_runs_its_job_once_on_sqlite(
    tmp_path: pathlib.Path, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    job, attempt, runs = await run_a_claim_held_past_a_stalled_loop(
        tmp_path / "jobs.db", wait_until, caplog, max_attempts=2
    )
    assert (job.status, job.result, attempt, runs) == (jobtable.Status.SUCCEEDED, 1, 1, 1)
    assert not [r for r in caplog.records if "never received" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_last_attempt_whose_claim_commits_a_lease_after_its_stamp_succeeds_on_sqlite(
    tmp_path: pathlib.Path, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    job, _, runs = await run_a_claim_held_past_a_stalled_loop(
        tmp_path / "jobs.db", wait_until, caplog, max_attempts=1
    )
    assert (job.status, job.error, job.result, runs) == (jobtable.Status.SUCCEEDED, None, 1, 1)


def test_two_runners_maintenance_deleting_each_others_rows_does_not_deadlock(
    pg_url: str,
) -> None:
    # Each transaction renews its own runner's lease (locking its row), and
    # then, with both leases looking expired, forgets dead runners and fails
    # their jobs: without skipping the rows the other holds, each would wait
    # for the other's row, and one would be aborted as a deadlock.
    with jobtable.Store.open(pg_url) as a, jobtable.Store.open(pg_url) as b:
        old = timestamp(datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1))
        for name in ("a", "b"):
            a.engine.write(functools.partial(register, name=name, now=old))
        both_hold_their_rows = threading.Barrier(2, timeout=30)

        def maintain(name: str) -> Callable[[Queries], int]:
            def op(q: Queries) -> int:
                q.heartbeat_runner(now=old, name=name)
                both_hold_their_rows.wait()
                # A negative lease puts every heartbeat before the cutoff.
                failed = q.interrupt_jobs_of_dead_runners(
                    error=jobtable.MESSAGE_INTERRUPTED, now=now(), runner=name, lease=-3600.0
                )
                return failed + q.delete_dead_runners(now=now(), lease=-3600.0, name=name)

            return op

        results: dict[str, int | BaseException] = {}

        def run(store: jobtable.Store, name: str) -> None:
            try:
                results[name] = store.engine.write(maintain(name))
            except BaseException as err:  # the test reports it below
                results[name] = err

        threads = [threading.Thread(target=run, args=(s, n)) for s, n in ((a, "a"), (b, "b"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        errors = {name: r for name, r in results.items() if not isinstance(r, int)}
        assert errors == {}
        assert sorted(results) == ["a", "b"]
        # Neither forgot itself: the one that committed last is still registered.
        remaining = [n for n in ("a", "b") if heartbeat_of(a, n) is not None]
        assert remaining
