"""Outages of the store: live runners fail none of each other's jobs, and recovery is quick.

When nobody can write for longer than the lease, no runner can heartbeat, so
every peer's heartbeat looks stale once the store is back. A runner judges
peers dead only after its own writes have landed promptly for a whole lease
(``jobtable._runner.contact``), so an outage with every runner alive fails nothing,
while a runner that really died still has its jobs failed afterwards.

The PostgreSQL server restarts here are of a throwaway cluster of the test's
own (the ``throwaway_pg`` fixture: initdb into a temporary folder, on a free
port), never of the shared server.
"""

import asyncio
import contextlib
import dataclasses
import logging
import pathlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager

import pg_cluster
import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._runner.run_operations import FinishAndClaim
from jobtable._values import now

WaitUntil = Callable[..., Awaitable[None]]

LEASE = 1.0
"""The lease of the tests' runners, in seconds."""

OUTAGE = 3 * LEASE
"""How long the store is out of reach: three leases."""

RUNNERS = 3
"""How many live runners share the store, each with a store (connections) of its own."""


@dataclasses.dataclass
class Figures:
    """What one outage did."""

    outage: float
    runners: int
    live_jobs_failed: int
    dead_job_failed_after: float
    """Seconds from the store's return to the failure of the dead runner's job."""


async def live_runners_through_an_outage(
    open_store: Callable[[], jobtable.Store],
    outage: Callable[[], AbstractAsyncContextManager[None]],
    wait_until: WaitUntil,
    open_control: Callable[[], jobtable.Store] | None = None,
) -> Figures:
    """Runs RUNNERS live runners, each holding a job, through an outage of OUTAGE seconds.

    A runner that claimed a job and died just before the outage is the
    control: its job must still be failed as interrupted after the outage.
    The test's own writes before the outage go through open_control's store
    (open_store's by default): the runners' stores may give up on a busy
    lock sooner than a test's setup should.
    """
    release = asyncio.Event()

    async def hold(ctx: jobtable.JobContext[int], payload: int) -> int:
        await release.wait()
        return payload

    stores = [open_store() for _ in range(RUNNERS)]
    control = (open_control or open_store)()
    runners = [
        jobtable.Runner(s, name=f"live-{i}", workers=1, lease=LEASE, poll_interval=0.1)
        for i, s in enumerate(stores)
    ]
    kinds = [runner.register("hold", hold) for runner in runners]
    first = runners[0]
    ids = kinds[0].enqueue_many(list(range(RUNNERS)))
    try:
        for runner in runners:
            await runner.start()
        await wait_until(
            lambda: all(first.get(i).status is jobtable.Status.RUNNING for i in ids), limit=60
        )
        # Long enough for every runner to judge its peers: its own writes
        # have landed for more than a lease.
        await asyncio.sleep(2 * LEASE)
        dead_id = kinds[0].enqueue(control, -1)
        control.engine.write(
            lambda q: q.register_runner(name="dead", now=now(), host=None, process=None)
        )
        control.engine.write(claim_for("dead"))
        assert first.get(dead_id).status is jobtable.Status.RUNNING
        async with outage():
            started = time.monotonic()
            await asyncio.sleep(OUTAGE)
        back = time.monotonic()
        length = back - started
        await wait_until(lambda: first.get(dead_id).status is jobtable.Status.FAILED, limit=60)
        dead_failed_after = time.monotonic() - back
        # Room for a late misjudgment, had there been one.
        await asyncio.sleep(2 * LEASE)
        release.set()
        await wait_until(
            lambda: all(first.get(i).status is not jobtable.Status.RUNNING for i in ids),
            limit=60,
        )
        failed = [i for i in ids if first.get(i).status is jobtable.Status.FAILED]
        assert first.get(dead_id).error == jobtable.MESSAGE_INTERRUPTED
    finally:
        release.set()
        for runner in runners:
            runner.stop()
        for runner in runners:
            await runner.wait()
        for store in [*stores, control]:
            store.close()
    return Figures(length, RUNNERS, len(failed), dead_failed_after)


def claim_for(runner: str) -> Callable[[Queries], None]:
    """The write that claims one queued job for a runner that is not running here."""

    def claim(q: Queries) -> None:
        _, claimed = FinishAndClaim([], runner, "default", 1, now())(q)
        assert len(claimed) == 1

    return claim


def report(engine: str, how: str, figures: Figures) -> None:
    print(
        f"\n{engine}, {how}: outage {figures.outage:.1f} s (lease {LEASE} s), "
        f"{figures.runners} live runners, {figures.live_jobs_failed} of their jobs failed; "
        f"the dead runner's job failed {figures.dead_job_failed_after:.1f} s after the store "
        "came back"
    )


@contextlib.contextmanager
def sqlite_locked(path: pathlib.Path) -> Iterator[None]:
    """Holds SQLite's write lock on path: every write of the store fails meanwhile."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")


@contextlib.contextmanager
def postgres_locked(url: str, tables: str = "jobs") -> Iterator[None]:
    """Holds tables locked: every write waits, and fails after the URL's lock_timeout if any."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url) as holder:
        holder.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(sql.SQL(tables)))
        try:
            yield
        finally:
            holder.rollback()


@contextlib.asynccontextmanager
async def during(hold: contextlib.AbstractContextManager[None]) -> AsyncIterator[None]:
    """hold, as an async context manager."""
    with hold:
        yield


async def test_sqlite_an_outage_longer_than_the_lease_fails_no_live_runners_job(
    tmp_path: pathlib.Path, wait_until: WaitUntil
) -> None:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()

    # Every write fails, as on a full disk: the runners wait 50 ms for the lock.
    figures = await live_runners_through_an_outage(
        lambda: jobtable.Store.open(path, busy_timeout=0.05),
        lambda: during(sqlite_locked(path)),
        wait_until,
        open_control=lambda: jobtable.Store.open(path),
    )
    report("sqlite", "writes failing", figures)
    assert figures.live_jobs_failed == 0


async def test_postgres_tables_locked_longer_than_the_lease_fail_no_live_runners_job(
    pg_url: str, wait_until: WaitUntil
) -> None:
    # Every write waits: the heartbeats land late, all at once.
    figures = await live_runners_through_an_outage(
        lambda: jobtable.Store.open(pg_url),
        lambda: during(postgres_locked(pg_url, "runners, jobs")),
        wait_until,
    )
    report("postgres", "tables locked", figures)
    assert figures.live_jobs_failed == 0


@pytest.mark.slow
async def test_postgres_a_server_down_longer_than_the_lease_fails_no_live_runners_job(
    throwaway_pg: pg_cluster.Cluster, wait_until: WaitUntil
) -> None:
    @contextlib.asynccontextmanager
    async def down() -> AsyncIterator[None]:
        await asyncio.to_thread(throwaway_pg.stop, "fast")
        try:
            yield
        finally:
            await asyncio.to_thread(throwaway_pg.start)

    figures = await live_runners_through_an_outage(
        lambda: jobtable.Store.open(throwaway_pg.url), down, wait_until
    )
    report("postgres", "server stopped", figures)
    assert figures.live_jobs_failed == 0


@pytest.mark.slow
async def test_postgres_after_a_restart_the_first_write_gets_a_fresh_connection(
    throwaway_pg: pg_cluster.Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    with jobtable.Store.open(throwaway_pg.url) as store:
        runner = jobtable.Runner(store, name="r")
        kind = runner.register("noop", noop)
        # Ten writers at once fill the pool (ten connections), then rest.
        barrier = threading.Barrier(10)

        def write() -> None:
            barrier.wait()
            for _ in range(20):
                kind.enqueue(0)

        threads = [threading.Thread(target=write) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        throwaway_pg.restart("fast")
        # Every pooled connection is dead now. Checking them one at a time
        # would cost a probe each; the first one found dead drains the pool.
        job_id = kind.enqueue(1)
        assert await runner.run_next() is not None
        assert job_id
    drained = [r for r in caplog.records if "replacing every pooled one" in r.getMessage()]
    assert drained


@pytest.mark.slow
def test_postgres_writes_during_an_outage_fail_at_once_and_the_first_after_it_connects(
    throwaway_pg: pg_cluster.Cluster,
) -> None:
    with jobtable.Store.open(throwaway_pg.url) as store:
        kind = jobtable.Runner(store, name="r").register("noop", noop)
        kind.enqueue(0)
        throwaway_pg.stop("fast")
        try:
            # Each write while the server is down tries to connect itself and
            # fails with libpq's own error, at once. psycopg_pool would have
            # queued it behind its background reconnect, which backs off 1, 2,
            # 4, 8 s, uncapped, and raised a pool timeout after 30 s.
            for _ in range(3):
                with pytest.raises(jobtable.StoreError, match="Connection refused"):
                    kind.enqueue(1)
                time.sleep(0.5)
        finally:
            throwaway_pg.start()
        # The first write once the server is back connects on its own try,
        # with no reconnect schedule left from the outage to wait for.
        job_id = kind.enqueue(2)
        assert kind.get(job_id).status is jobtable.Status.QUEUED


async def noop(ctx: jobtable.JobContext[None], payload: int) -> None:
    """A handler that does nothing."""
    return None


@contextlib.contextmanager
def store_held(engine: str, store_target: str) -> Iterator[None]:
    """Holds the store's write lock (SQLite) or its jobs table (PostgreSQL)."""
    with (
        sqlite_locked(pathlib.Path(store_target))
        if engine == "sqlite"
        else postgres_locked(store_target)
    ):
        yield


async def test_a_step_whose_write_fails_for_a_moment_is_retried_and_recorded_once(
    engine: str, store_target: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    # Writes fail after 50 ms of waiting for the lock the test holds.
    target = store_target.replace("options=-c", "options=-clock_timeout%3D50%20-c")
    holding = threading.Event()

    def seven(n: int) -> int:
        return 7

    def work(ctx: jobtable.JobContext[int], payload: int) -> int:
        ctx.publish(1)
        holding.wait(30)
        # The store refuses writes for a moment: the step's write waits it out.
        return ctx.step_sync("seven", seven, payload)

    def retried() -> bool:
        return any("record job step; retrying" in r.msg for r in caplog.records)

    with jobtable.Store.open(target, busy_timeout=0.05) as store:
        runner = jobtable.Runner(store, name="r", lease=30)
        kind = runner.register("work", work)
        job_id = kind.enqueue(0)
        task = asyncio.create_task(runner.run_next())
        await wait_until(lambda: kind.get(job_id).result == 1)
        with store_held(engine, store_target):
            holding.set()
            await wait_until(retried)
        assert await task == job_id
        assert (kind.get(job_id).status, kind.get(job_id).result) == (jobtable.Status.SUCCEEDED, 7)
        assert [(s.name, s.attempt) for s in store.inspect(job_id).steps] == [("seven", 1)]


async def test_a_publish_that_fails_for_a_moment_is_retried_and_the_job_goes_on(
    engine: str, store_target: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    # Writes fail after 50 ms of waiting for the lock the test holds.
    target = store_target.replace("options=-c", "options=-clock_timeout%3D50%20-c")
    holding = threading.Event()

    def work(ctx: jobtable.JobContext[int], payload: int) -> int:
        ctx.publish(1)
        holding.wait(30)
        # The store refuses writes for a moment: the publish waits it out.
        ctx.publish(2)
        return 3

    def retried() -> bool:
        return any("publish job result; retrying" in r.msg for r in caplog.records)

    with jobtable.Store.open(target, busy_timeout=0.05) as store:
        runner = jobtable.Runner(store, name="r", lease=30)
        kind = runner.register("work", work)
        job_id = kind.enqueue(0)
        task = asyncio.create_task(runner.run_next())
        await wait_until(lambda: kind.get(job_id).result == 1)
        with store_held(engine, store_target):
            holding.set()
            await wait_until(retried)
        assert await task == job_id
        job = kind.get(job_id)
        assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, 3)
