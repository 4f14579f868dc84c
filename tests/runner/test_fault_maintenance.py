"""A heartbeat delayed past the lease fails nothing, and maintenance never deadlocks.

The maintenance step (heartbeat, failing dead runners' jobs, pruning) takes
every time it uses from one reading of the clock, so a step that waits for a
lock compares its heartbeat with a cutoff of the same moment, and a runner
never counts itself dead. On PostgreSQL two runners' steps skip the rows the
other holds, so they never deadlock deleting each other's rows.
"""

import asyncio
import datetime
import functools
import logging
import threading
from collections.abc import Awaitable, Callable

import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._values import now, timestamp

WaitUntil = Callable[..., Awaitable[None]]

LEASE = 1.0
"""The lease of the tests' runners, in seconds."""


def register(q: Queries, *, name: str, now: str) -> None:
    q.register_runner(name=name, now=now, host=None, process=None)


def heartbeat_of(store: jobtable.Store, name: str) -> str | None:
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
    import psycopg

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
