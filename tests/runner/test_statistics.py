"""A runner gathers PostgreSQL's planner statistics of jobs when a burst outgrew them.

On statistics gathered before a burst of jobs (or never), every queued job
looks rare and the claim's indexes all look as cheap: a partitioned claim
over 20,000 queued jobs read every queued entry of its queue once per key
(0.8 s a claim, where it takes 15 ms on current statistics). Autovacuum
gathers them a minute or more later, and never where it is off, as on the
test server. So a runner looks at begin and at each round, and runs ANALYZE
when the table holds over twice the rows its statistics describe.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

import jobtable
from jobtable.db.postgres import jobs as pg_jobs

WaitUntil = Callable[..., Awaitable[None]]

OWNERLESS_CHECK = (
    "SELECT s.n_live_tup >= 500 AND s.n_live_tup > 2 * GREATEST(c.reltuples, 250)::bigint"
    " FROM pg_class AS c JOIN pg_stat_user_tables AS s ON s.relid = c.oid"
    " WHERE c.oid = 'jobs'::regclass"
)
"""JobsStatisticsStale without its test of who may analyze the table."""


async def noop(ctx: jobtable.JobContext[None], payload: int) -> None:
    return None


def analyzed(url: str) -> Any:
    """When jobs' statistics were last gathered by hand (ANALYZE), or None."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT last_analyze FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass"
        ).fetchone()
    assert row is not None
    return row[0]


def stale(store: jobtable.Store) -> bool:
    return store.engine.read(lambda q: q.jobs_statistics_stale())


BURST = jobtable.Kind("burst", int, type(None), queue="elsewhere")
"""The kind of the bursts: its queue has no runner, so its jobs stay queued."""


@contextlib.asynccontextmanager
async def running(
    store: jobtable.Store, lease: float
) -> AsyncIterator[tuple[jobtable.Runner, jobtable.Kind[int, None]]]:
    """A started runner of lease seconds, with a kind of its own, stopped after the block."""
    runner = jobtable.Runner(store, name="r", lease=lease)
    other = runner.register("other", noop)
    await runner.start()
    try:
        yield runner, other
    finally:
        runner.stop()
        await runner.wait()


async def burst(store: jobtable.Store, wait_until: WaitUntil) -> None:
    """Enqueues 2,000 jobs into a table whose statistics predate them, until they are stale."""
    BURST.enqueue_many(store, list(range(2_000)))
    # The server's counters reach the view within a second or so.
    await wait_until(lambda: stale(store), limit=30)


@pytest.mark.postgres
async def test_a_runner_gathers_statistics_a_burst_outgrew_at_begin_and_at_each_round(
    pg_url: str, wait_until: WaitUntil
) -> None:
    with jobtable.Store.open(pg_url) as store:
        await burst(store, wait_until)
        assert analyzed(pg_url) is None

        async with running(store, lease=1.0):
            assert analyzed(pg_url) is not None
            assert not stale(store)
            first = analyzed(pg_url)

            # A second burst, over twice the rows of the statistics: the
            # next rounds (a third of the lease apart) gather them again.
            BURST.enqueue_many(store, list(range(5_000)))
            await wait_until(lambda: analyzed(pg_url) != first, limit=30)
            assert not stale(store)


@pytest.mark.postgres
async def test_statistics_that_describe_the_table_are_left_alone(
    pg_url: str, wait_until: WaitUntil
) -> None:
    with jobtable.Store.open(pg_url) as store:
        await burst(store, wait_until)
        store.engine.write(lambda q: q.analyze_jobs())
        gathered = analyzed(pg_url)
        # Fewer than the rows gathered again: not stale, however many rounds pass.
        BURST.enqueue_many(store, list(range(1_000)))
        async with running(store, lease=0.3):
            await asyncio.sleep(1.5)
            assert not stale(store)
            assert analyzed(pg_url) == gathered


@pytest.mark.postgres
async def test_a_vacuum_holding_the_table_makes_the_runner_skip_gathering_not_stall(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    caplog.set_level(logging.INFO, logger="jobtable")
    with jobtable.Store.open(pg_url) as store:
        await burst(store, wait_until)
        with psycopg.connect(pg_url) as holder:
            # The lock a vacuum takes: ANALYZE waits for it.
            holder.execute("LOCK TABLE jobs IN SHARE UPDATE EXCLUSIVE MODE")
            async with running(store, lease=0.6) as (runner, other):
                try:
                    job = other.enqueue(1)
                    await wait_until(lambda: runner.get(job).status is jobtable.Status.SUCCEEDED)
                    await wait_until(
                        lambda: any(
                            "statistics not gathered" in r.getMessage() for r in caplog.records
                        )
                    )
                    assert analyzed(pg_url) is None
                finally:
                    holder.rollback()
                await wait_until(lambda: analyzed(pg_url) is not None, limit=30)


def test_sqlite_never_counts_its_statistics_stale(tmp_path: Any) -> None:
    with jobtable.Store.open(tmp_path / "jobs.db") as store:
        jobtable.Kind("burst", int, type(None)).enqueue_many(store, list(range(2_000)))
        assert not stale(store)
        store.engine.write(lambda q: q.analyze_jobs())


@pytest.mark.postgres
async def test_a_role_that_may_not_analyze_the_table_is_never_told_it_is_stale(
    pg_url: str, wait_until: WaitUntil
) -> None:
    import secrets
    import urllib.parse

    import psycopg

    role = f"jobtable_reader_{secrets.token_hex(4)}"
    with jobtable.Store.open(pg_url) as store:
        await burst(store, wait_until)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            schema = admin.execute("SELECT current_schema()").fetchone()
            assert schema is not None
            admin.execute(f"CREATE ROLE {role} LOGIN")
            try:
                admin.execute(f'GRANT USAGE ON SCHEMA "{schema[0]}" TO {role}')
                admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema[0]}" TO {role}')
                parts = urllib.parse.urlsplit(pg_url)
                as_reader = parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}")
                with psycopg.connect(urllib.parse.urlunsplit(as_reader)) as reader:
                    row = reader.execute(pg_jobs.JOBS_STATISTICS_STALE).fetchone()
                    counters = reader.execute(OWNERLESS_CHECK).fetchone()
                assert row == (False,)
                # Not for want of the counters: without the owner's test the
                # same check says stale for this role too.
                assert counters == (True,)
                # The table's owner is told.
                assert stale(store)
            finally:
                admin.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{schema[0]}" FROM {role}')
                admin.execute(f'REVOKE ALL ON SCHEMA "{schema[0]}" FROM {role}')
                admin.execute(f"DROP ROLE {role}")
