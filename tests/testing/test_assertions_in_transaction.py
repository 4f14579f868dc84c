"""assert_enqueued(..., conn=): what the application's transaction enqueued, before it commits."""

import contextlib
import pathlib
import sqlite3
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy
from sqlalchemy import orm
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

import jobtable
from jobtable.testing import (
    aassert_enqueued,
    aassert_not_enqueued,
    assert_enqueued,
    assert_not_enqueued,
    enqueued,
)

ping = jobtable.Kind("ping", int, int)


@pytest.fixture
def conn(engine: str, store_target: str) -> Iterator[sqlite3.Connection | psycopg.Connection]:
    """The application's own connection to the store's database, with no transaction yet."""
    opened: sqlite3.Connection | psycopg.Connection
    opened = sqlite3.connect(store_target) if engine == "sqlite" else psycopg.connect(store_target)
    yield opened
    opened.close()


def test_the_transaction_sees_its_uncommitted_job_and_the_store_does_not(
    store: jobtable.Store, conn: sqlite3.Connection | psycopg.Connection
) -> None:
    job_id = ping.enqueue(store, 7, conn=conn)
    assert assert_enqueued(store, ping, 7, conn=conn).id == job_id
    assert_not_enqueued(store, ping)
    conn.rollback()
    assert_not_enqueued(store, ping, conn=conn)
    assert enqueued(store) == []


def test_a_committed_job_is_seen_both_ways(
    store: jobtable.Store, conn: sqlite3.Connection | psycopg.Connection
) -> None:
    job_id = ping.enqueue(store, 7, conn=conn)
    conn.commit()
    assert (
        assert_enqueued(store, ping, 7).id == assert_enqueued(store, ping, conn=conn).id == job_id
    )


async def test_the_async_forms_read_a_sync_connection(
    store: jobtable.Store, conn: sqlite3.Connection | psycopg.Connection
) -> None:
    ping.enqueue(store, 1, conn=conn)
    await aassert_enqueued(store, ping, 1, conn=conn)
    await aassert_not_enqueued(store, ping)


def test_a_sqlalchemy_session_is_read_in_its_transaction(
    store: jobtable.Store, engine: str, store_target: str
) -> None:
    url = f"sqlite:///{store_target}" if engine == "sqlite" else store_target
    database = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with orm.Session(database) as session:
            job_id = ping.enqueue(store, 3, conn=session)
            assert assert_enqueued(store, ping, conn=session).id == job_id
            assert_not_enqueued(store, ping)
            session.rollback()
            assert_not_enqueued(store, ping, conn=session)
    finally:
        database.dispose()


def test_a_connection_to_another_database_is_refused(
    store: jobtable.Store, engine: str, tmp_path: pathlib.Path, new_pg_url_or_file: str
) -> None:
    other = (
        sqlite3.connect(new_pg_url_or_file)
        if engine == "sqlite"
        else psycopg.connect(new_pg_url_or_file)
    )
    try:
        with pytest.raises(
            ValueError, match=r"assert_enqueued: .*(not to the store's file|no jobs table)"
        ):
            assert_enqueued(store, ping, conn=other)
        with pytest.raises(TypeError, match="conn"):
            assert_enqueued(store, ping, conn=object())
    finally:
        other.close()


@pytest.fixture
def new_pg_url_or_file(engine: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> str:
    """Another database than the store's: a SQLite file, or a fresh schema without jobtable's."""
    if engine == "sqlite":
        return str(tmp_path / "other.db")
    url: str = request.getfixturevalue("new_pg_url")()
    return url


async def test_the_async_forms_read_an_async_connection_in_its_transaction(pg_url: str) -> None:
    with jobtable.Store.open(pg_url) as store:
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            job_id = await ping.aenqueue(store, 1, conn=conn)
            assert (await aassert_enqueued(store, ping, 1, conn=conn)).id == job_id
            await aassert_not_enqueued(store, ping, 1)  # not committed yet
            with pytest.raises(TypeError, match="async form"):
                assert_enqueued(store, ping, conn=conn)
            await conn.rollback()
            await aassert_not_enqueued(store, ping, conn=conn)
        engine = create_async_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            async with AsyncSession(engine) as session:
                job_id = await ping.aenqueue(store, 2, conn=session)
                assert (await aassert_enqueued(store, ping, 2, conn=session)).id == job_id
                await aassert_not_enqueued(store, ping, 2)
        finally:
            await engine.dispose()


async def test_an_async_read_of_a_sqlite_store_is_refused(tmp_path: pathlib.Path) -> None:
    target = str(tmp_path / "jobs.db")
    with jobtable.Store.open(target) as store, contextlib.closing(sqlite3.connect(target)) as conn:
        # A sync sqlite3 connection is read at once; the engine refuses an async read.
        await aassert_not_enqueued(store, ping, conn=conn)
        with pytest.raises(TypeError, match="synchronous"):
            await store.engine.aread_in(conn, lambda q: None, "aassert_enqueued")
