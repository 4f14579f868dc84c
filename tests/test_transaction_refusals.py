"""Enqueue in the application's transaction refuses a connection it cannot use, storing nothing.

A connection of the other engine's driver, an async one given to a sync form
(and the reverse), a connection to another file or database, and one whose
search_path does not find the store's jobs table are each a clear error
naming the call and what was wrong.
"""

import pathlib
import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import Literal

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session
from transaction_ways import sqlalchemy_url

import jobtable

email = jobtable.Kind("email", int, int)


@pytest.fixture
def sqlite_store(tmp_path: pathlib.Path) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(tmp_path / "jobs.db") as store:
        yield store


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(pg_url) as store:
        yield store


def test_sqlite_refuses_a_connection_to_another_file(
    sqlite_store: jobtable.Store, tmp_path: pathlib.Path
) -> None:
    other = tmp_path / "other.db"
    with jobtable.Store.open(other):
        pass  # another file with jobtable's tables, so only the check can tell
    conn = sqlite3.connect(other)
    try:
        with pytest.raises(
            ValueError, match=re.escape(f"not to the store's file {str(tmp_path / 'jobs.db')!r}")
        ):
            email.enqueue(sqlite_store, 1, conn=conn)
        conn.commit()
        assert conn.execute("SELECT count(*) FROM jobs").fetchone() == (0,)
    finally:
        conn.close()
    assert sqlite_store.counts() == {}


def test_sqlite_refuses_a_connection_to_a_database_in_memory(sqlite_store: jobtable.Store) -> None:
    conn = sqlite3.connect(":memory:")
    try:
        with pytest.raises(
            ValueError, match="enqueue_many 'email': conn is a connection to 'a database in memory'"
        ):
            email.enqueue_many(sqlite_store, [1], conn=conn)
    finally:
        conn.close()


def test_sqlite_refuses_a_psycopg_connection(sqlite_store: jobtable.Store, pg_url: str) -> None:
    with (
        psycopg.connect(pg_url) as conn,
        pytest.raises(
            TypeError,
            match=r"enqueue 'email': the store is SQLite: conn must be a sqlite3.Connection",
        ),
    ):
        email.enqueue(sqlite_store, 1, conn=conn)
    assert sqlite_store.counts() == {}


def test_sqlite_refuses_an_object_that_is_no_connection(sqlite_store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match=r"got builtins.str"):
        email.enqueue(sqlite_store, 1, conn="jobs.db")


async def test_sqlite_async_forms_refuse_a_sqlite3_connection_as_synchronous(
    sqlite_store: jobtable.Store, tmp_path: pathlib.Path
) -> None:
    conn = sqlite3.connect(tmp_path / "jobs.db")
    try:
        with pytest.raises(TypeError, match=r"enqueue 'email': conn is synchronous"):
            await email.aenqueue(sqlite_store, 1, conn=conn)
        with pytest.raises(TypeError, match=r"conn is synchronous .*sqlite3.Connection"):
            await email.aenqueue_many(sqlite_store, [1], conn=conn)
    finally:
        conn.close()
    assert sqlite_store.counts() == {}


def test_postgres_refuses_a_sqlite3_connection(
    pg_store: jobtable.Store, tmp_path: pathlib.Path
) -> None:
    conn = sqlite3.connect(tmp_path / "app.db")
    try:
        with pytest.raises(
            TypeError, match=r"the store is PostgreSQL: conn must be a psycopg.Connection"
        ):
            email.enqueue(pg_store, 1, conn=conn)
    finally:
        conn.close()
    assert pg_store.counts() == {}


async def test_sync_forms_refuse_async_connections_and_sessions(
    pg_store: jobtable.Store, pg_url: str
) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        with pytest.raises(TypeError, match=r"enqueue 'email': conn is asynchronous \(psycopg"):
            email.enqueue(pg_store, 1, conn=conn)
    sa = create_async_engine(sqlalchemy_url(pg_url, "postgres"))
    try:
        async with AsyncSession(sa) as session:
            with pytest.raises(TypeError, match=r"conn is asynchronous .*AsyncSession"):
                email.enqueue_many(pg_store, [1], conn=session)
    finally:
        await sa.dispose()
    assert pg_store.counts() == {}


async def test_async_forms_refuse_sync_connections_and_sessions(
    pg_store: jobtable.Store, pg_url: str
) -> None:
    with (
        psycopg.connect(pg_url) as conn,
        pytest.raises(TypeError, match=r"conn is synchronous \(psycopg"),
    ):
        await email.aenqueue(pg_store, 1, conn=conn)
    sa = create_engine(sqlalchemy_url(pg_url, "postgres"))
    try:
        with (
            Session(sa) as session,
            pytest.raises(TypeError, match=r"conn is synchronous .*Session"),
        ):
            await email.aenqueue_many(pg_store, [1], conn=session)
    finally:
        sa.dispose()
    assert pg_store.counts() == {}


def test_postgres_refuses_a_connection_to_another_database(
    pg_store: jobtable.Store, pg_server: str
) -> None:
    other = re.sub(r"/test(\?|$)", r"/postgres\1", pg_server)
    with (
        psycopg.connect(other) as conn,
        pytest.raises(
            ValueError, match="conn is connected to database 'postgres', not the store's"
        ),
    ):
        email.enqueue(pg_store, 1, conn=conn)
    assert pg_store.counts() == {}


def schema_of(url: str) -> str:
    match = re.search(r"search_path%3D(\w+)", url)
    assert match is not None, url
    return match.group(1)


def test_postgres_refuses_a_search_path_without_the_stores_schema(
    pg_store: jobtable.Store, pg_url: str, pg_server: str
) -> None:
    schema = schema_of(pg_url)
    with psycopg.connect(pg_server) as conn:
        conn.execute("SET search_path TO public")
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"conn's search_path finds no jobs table; put the store's schema {schema!r}"
            ),
        ):
            email.enqueue(pg_store, 1, conn=conn)
    assert pg_store.counts() == {}


async def test_postgres_refuses_a_search_path_that_finds_another_schemas_jobs_table(
    pg_store: jobtable.Store, pg_url: str, new_pg_url: Callable[[], str]
) -> None:
    other_url = new_pg_url()
    with jobtable.Store.open(other_url) as other:
        async with await psycopg.AsyncConnection.connect(other_url) as conn:
            with pytest.raises(
                ValueError, match=f"finds the jobs table of schema '{schema_of(other_url)}'"
            ):
                await email.aenqueue(pg_store, 1, conn=conn)
        assert other.counts() == {}
    assert pg_store.counts() == {}


def test_postgres_takes_a_search_path_that_reaches_the_stores_schema_after_others(
    pg_store: jobtable.Store, pg_url: str, pg_server: str
) -> None:
    """Any search_path on which "jobs" names the store's table will do: it need not be first."""
    schema = schema_of(pg_url)
    with psycopg.connect(pg_server) as conn:
        conn.execute(sql.SQL("SET search_path TO public, {}").format(sql.Identifier(schema)))
        job_id = email.enqueue(pg_store, 1, conn=conn)
    assert pg_store.get(job_id).status is jobtable.Status.QUEUED


def test_a_closed_store_refuses_to_enqueue_in_a_transaction(pg_url: str) -> None:
    store = jobtable.Store.open(pg_url)
    store.close()
    with (
        psycopg.connect(pg_url) as conn,
        pytest.raises(jobtable.StoreError, match="the store is closed"),
    ):
        email.enqueue(store, 1, conn=conn)


def test_a_payload_error_stores_nothing_and_leaves_the_transaction_usable(
    pg_store: jobtable.Store, pg_url: str
) -> None:
    with psycopg.connect(pg_url) as conn:
        with pytest.raises(jobtable.PayloadError):
            email.enqueue(pg_store, "not an int", conn=conn)  # type: ignore[call-overload]
        job_id = email.enqueue(pg_store, 2, conn=conn)
    assert pg_store.get(job_id).status is jobtable.Status.QUEUED
    assert pg_store.counts() == {"default": {jobtable.Status.QUEUED: 1}}


# All or none: a trigger planted in the test's database refuses the third
# job of a batch, after the first two were inserted.

PLANTED_SQLITE = """CREATE TRIGGER refuse_three BEFORE INSERT ON jobs WHEN NEW.payload = '3'
BEGIN SELECT RAISE(ABORT, 'planted refusal'); END"""


@pytest.mark.parametrize("isolation_level", ["DEFERRED", "IMMEDIATE", None], ids=repr)
def test_sqlite_enqueue_many_in_a_transaction_is_all_or_none(
    sqlite_store: jobtable.Store,
    tmp_path: pathlib.Path,
    isolation_level: Literal["DEFERRED", "IMMEDIATE"] | None,
) -> None:
    """Legacy transaction control (implicit BEGIN) and autocommit (isolation_level None) alike."""
    conn = sqlite3.connect(tmp_path / "jobs.db", isolation_level=isolation_level)
    try:
        conn.execute(PLANTED_SQLITE)
        kept = email.enqueue(sqlite_store, 7, conn=conn)
        with pytest.raises(jobtable.StoreError, match="planted refusal"):
            email.enqueue_many(sqlite_store, [1, 2, 3, 4], conn=conn)
        conn.commit()
    finally:
        conn.close()
    assert sqlite_store.counts() == {"default": {jobtable.Status.QUEUED: 1}}
    assert sqlite_store.get(kept).status is jobtable.Status.QUEUED


def plant_refusal(url: str) -> None:
    """Makes the jobs table of url's schema refuse a job whose payload is 3."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse_three() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN IF NEW.payload = '3' THEN RAISE EXCEPTION 'planted refusal'; END IF; "
            "RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse_three BEFORE INSERT ON jobs "
            "FOR EACH ROW EXECUTE FUNCTION refuse_three()"
        )


def test_postgres_enqueue_many_refused_inside_a_transaction_leaves_it_usable(
    pg_store: jobtable.Store, pg_url: str
) -> None:
    """The batch runs in a savepoint: its error rolls back the batch alone."""
    plant_refusal(pg_url)
    with psycopg.connect(pg_url) as conn:
        kept = email.enqueue(pg_store, 7, conn=conn)
        with pytest.raises(jobtable.StoreError, match="planted refusal"):
            email.enqueue_many(pg_store, [1, 2, 3, 4], conn=conn)
        also = email.enqueue(pg_store, 8, conn=conn)
    assert pg_store.counts() == {"default": {jobtable.Status.QUEUED: 2}}
    assert [pg_store.inspect(i).payload for i in (kept, also)] == [7, 8]


async def test_postgres_async_enqueue_many_refused_inside_a_transaction_leaves_it_usable(
    pg_store: jobtable.Store, pg_url: str
) -> None:
    plant_refusal(pg_url)
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        kept = await email.aenqueue(pg_store, 7, conn=conn)
        with pytest.raises(jobtable.StoreError, match="planted refusal"):
            await email.aenqueue_many(pg_store, [1, 2, 3, 4], conn=conn)
        await conn.commit()
    assert pg_store.counts() == {"default": {jobtable.Status.QUEUED: 1}}
    assert pg_store.inspect(kept).payload == 7


def test_postgres_enqueue_many_on_an_autocommit_connection_is_all_or_none(
    pg_store: jobtable.Store, pg_url: str
) -> None:
    plant_refusal(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(jobtable.StoreError, match="planted refusal"):
            email.enqueue_many(pg_store, [1, 2, 3, 4], conn=conn)
        ids = email.enqueue_many(pg_store, [5, 6], conn=conn)  # autocommitted at once
    assert pg_store.counts() == {"default": {jobtable.Status.QUEUED: 2}}
    assert [pg_store.inspect(i).payload for i in ids] == [5, 6]


def test_sqlite_enqueue_blocked_by_the_apps_own_open_transaction_names_conn(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "app.db"
    with jobtable.Store.open(path, busy_timeout=0.05) as store:
        app = sqlite3.connect(path, isolation_level=None)
        try:
            app.execute("BEGIN IMMEDIATE")  # the application's transaction, still open
            with pytest.raises(jobtable.StoreError, match="database is locked") as raised:
                email.enqueue(store, 1)
            assert "pass conn= to enqueue in it" in str(raised.value)
            email.enqueue(store, 2, conn=app)  # what the message says to do
            app.execute("COMMIT")
        finally:
            app.close()
        assert [job.status for job in store.list_jobs()] == [jobtable.Status.QUEUED]
