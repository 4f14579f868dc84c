"""A runner's claims on PostgreSQL on async connections on its event loop (``LoopConnections``).

Each test has a schema of its own on the real server. The claims are the
pool's statement: these tests check that the connections on the loop store
and claim as it does, are replaced when lost or cut short, and close. That
a started runner claims through them is tested in
tests/runner/test_claims_on_loop.py.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import NamedTuple

import psycopg
import pytest
from seam import enqueue, get, new_id, now

from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._engines.postgres.loop import LoopConnections
from jobtable._engines.rows import Outcome
from jobtable._errors import StoreError

pytestmark = pytest.mark.postgres

LIMIT = 10.0
"""Seconds a test waits for the runner before it fails; never a timing claim."""


class Opened(NamedTuple):
    """An engine on the test's own schema, and its connections on the test's event loop."""

    engine: PostgresEngine
    on_loop: LoopConnections


@pytest.fixture
async def opened(pg_url: str) -> AsyncIterator[Opened]:
    """The test's engine and connections on its loop, closed after the test."""
    engine = PostgresEngine.open(pg_url)
    on_loop = engine.loop_connections()
    yield Opened(engine, on_loop)
    await on_loop.aclose()
    engine.close()


async def backend_pid(on_loop: LoopConnections) -> int:
    """The server pid of the connection the next write of on_loop would use."""
    async with on_loop._connection() as conn:
        row = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
    assert row is not None
    return int(row[0])


async def one_queued(opened: Opened) -> tuple[LoopConnections, str, int]:
    """Enqueues one job: the connections on the loop, its id, and the connection's server pid."""
    job = new_id()
    enqueue(opened.engine, job)
    return opened.on_loop, job, await backend_pid(opened.on_loop)


async def wait_gone(url: str, pid: int) -> None:
    """Waits until the server has no backend of pid; fails the test after LIMIT seconds."""
    async with asyncio.timeout(LIMIT):
        while True:
            with psycopg.connect(url, autocommit=True) as conn:
                cur = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,))
                found = cur.fetchone()
            if found == (0,):
                return
            await asyncio.sleep(0.01)


async def wait_for_lock(url: str, pid: int) -> None:
    """Waits until the backend of pid waits for a lock; fails the test after LIMIT seconds."""
    query = "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s"
    async with asyncio.timeout(LIMIT):
        while True:
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute(query, (pid,)).fetchone()
            if row == ("Lock",):
                return
            await asyncio.sleep(0.01)


async def claim(on_loop: LoopConnections, max_jobs: int, *outcomes: Outcome) -> list[str]:
    """Stores outcomes and claims up to max_jobs jobs for runner "r"; the claimed ids."""
    _, rows = await on_loop.finish_and_claim(
        outcomes=outcomes, runner="r", queue="default", now=now(), max_jobs=max_jobs, kinds=None
    )
    return sorted(row.id for row in rows)


async def test_a_claim_on_the_loop_claims_and_its_outcome_is_stored_as_on_the_pool(
    opened: Opened,
) -> None:
    engine, on_loop = opened
    first, second = new_id(), new_id()
    enqueue(engine, first, second)
    assert await claim(on_loop, 1) == [first]
    done = Outcome(first, 1, "succeeded", '"ok"', None, None, False)
    finished, rows = await on_loop.finish_and_claim(
        outcomes=[done], runner="r", queue="default", now=now(), max_jobs=1, kinds=["k"]
    )
    assert finished == [first]
    assert [row.id for row in rows] == [second]
    stored = engine.read(get(first))
    assert stored is not None
    assert (stored.status, stored.result) == ("succeeded", '"ok"')
    # The outcome is fenced by its claim: the same one again changes nothing.
    finished, _ = await on_loop.finish_and_claim(
        outcomes=[done], runner="r", queue="default", now=now(), max_jobs=0, kinds=None
    )
    assert finished == []


async def test_a_connection_the_server_ended_while_idle_is_replaced_before_the_next_claim(
    opened: Opened, pg_url: str
) -> None:
    on_loop, job, pid = await one_queued(opened)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    await wait_gone(pg_url, pid)
    assert await claim(on_loop, 1) == [job]


async def test_a_cancelled_claim_leaves_its_connection_closed_and_the_next_claim_works(
    opened: Opened, pg_url: str
) -> None:
    on_loop, job, pid = await one_queued(opened)
    with psycopg.connect(pg_url) as locker:
        locker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
        # It claims nothing: the server runs it on once the lock is free.
        blocked = asyncio.ensure_future(claim(on_loop, 0))
        await wait_for_lock(pg_url, pid)
        blocked.cancel()
        with pytest.raises(asyncio.CancelledError):
            await blocked
        locker.rollback()
    assert await backend_pid(on_loop) != pid
    assert await claim(on_loop, 1) == [job]


async def test_after_aclose_its_connections_are_closed_and_a_claim_is_a_store_error(
    opened: Opened, pg_url: str
) -> None:
    on_loop = opened.on_loop
    pid = await backend_pid(on_loop)
    await on_loop.aclose()
    await on_loop.aclose()
    with pytest.raises(StoreError, match="closed"):
        await claim(on_loop, 1)
    await wait_gone(pg_url, pid)


async def test_a_claim_the_server_refuses_is_a_store_error_that_is_not_transient(
    opened: Opened,
) -> None:
    with pytest.raises(StoreError) as raised:
        await claim(opened.on_loop, -1)
    assert not raised.value.transient


async def test_a_store_that_is_not_durable_claims_without_synchronous_commit(
    pg_url: str,
) -> None:
    engine = PostgresEngine.open(pg_url, durable=False)
    on_loop = engine.loop_connections()
    try:
        async with on_loop._connection() as conn:
            row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
    finally:
        await on_loop.aclose()
        engine.close()
    assert row == ("off",)


def test_a_closed_engine_gives_no_connections_on_the_loop(pg_url: str) -> None:
    engine = PostgresEngine.open(pg_url)
    engine.close()
    with pytest.raises(StoreError, match="closed"):
        engine.loop_connections()
