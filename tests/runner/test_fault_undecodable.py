"""Rows the library cannot read fail alone, and no error leaves a statement open.

A row written behind the library's back can hold text that is not valid
UTF-8 (SQLite stores any bytes as TEXT, a SQL_ASCII PostgreSQL database too)
or a payload that is not JSON. Such a row is claimed like any other: it must
fail with the internal message, its cause logged, and the claim must go on to
the jobs behind it. And an operation that raises with a statement still in
progress must not leave that statement open: on SQLite it would fail every
later savepoint of the process and hold the write lock against the others.
"""

import contextlib
import logging
import pathlib
import secrets
import sqlite3
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.rows import NewJob
from jobtable._values import now
from jobtable.db.sqlite.jobs import CLAIM_NEXT_JOB


async def echo(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


def internal_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


def insert_sqlite_row(path: pathlib.Path, job_id: str, kind_sql: str, payload_sql: str) -> None:
    """Inserts a queued job behind the library's back, with SQL expressions for its text."""
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute(
            "INSERT INTO jobs (id, kind, payload, run_at, created_at, updated_at) "
            f"VALUES (?, {kind_sql}, {payload_sql}, ?, ?, ?)",
            (job_id, now(), now(), now()),
        )
        raw.commit()


async def runs_bad_row_alone_then_the_next(
    runner: jobtable.Runner,
    numbers: jobtable.Kind[int, int],
    column: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Enqueues a good job behind the row "bad", whose column holds the byte 0xff; runs both.

    The bad row fails alone with the internal message and its cause logged.
    """
    good = numbers.enqueue(7)
    assert await runner.run_next() == "bad"
    assert await runner.run_next() == good
    assert await runner.run_next() is None
    failed = runner.get("bad")
    assert (failed.status, failed.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert numbers.get(good).result == 7
    logged = [r.getMessage() for r in internal_errors(caplog)]
    assert logged == [
        f"job row cannot be read: its {column} is not valid UTF-8 at character 0: \\xff"
    ]


@pytest.mark.parametrize("column", ["payload", "kind"])
async def test_sqlite_a_row_that_is_not_utf8_fails_alone_and_the_queue_goes_on(
    tmp_path: pathlib.Path, column: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    path = tmp_path / "jobs.db"
    with jobtable.Store.open(path) as store:
        runner = jobtable.Runner(store, name="r")
        numbers = runner.register("number", echo)
        bad = "CAST(X'FF' AS TEXT)"
        insert_sqlite_row(
            path,
            "bad",
            bad if column == "kind" else "'number'",
            bad if column == "payload" else "'1'",
        )
        await runs_bad_row_alone_then_the_next(runner, numbers, column, caplog)
        # The process writes on, and another connection is not locked out.
        numbers.enqueue(8)
        with jobtable.Store.open(path, busy_timeout=2.0) as other:
            other_runner = jobtable.Runner(other, name="other")
            other_runner.register("number", echo).enqueue(9)
            assert await other_runner.run_next() is not None


def test_sqlite_an_operation_that_raises_mid_statement_leaves_nothing_open(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "jobs.db"
    with jobtable.Store.open(path) as store:
        runner = jobtable.Runner(store, name="r")
        numbers = runner.register("number", echo)
        numbers.enqueue_many([1, 2])

        def claim_one_row_then_raise(q: Queries) -> None:
            # The claim's UPDATE ... RETURNING is in progress once its first
            # row is fetched, as when decoding a row raises.
            conn = cast(sqlite3.Connection, cast(Any, q)._conn)
            cursor = conn.execute(CLAIM_NEXT_JOB, ("r", now(), "default", 2))
            cursor.fetchone()
            raise ValueError("raised mid-statement")

        # pytest keeps the exception, its traceback and so the cursor alive.
        with pytest.raises(ValueError, match="mid-statement") as raised:
            store.engine.write(claim_one_row_then_raise)
        numbers.enqueue(3)
        with jobtable.Store.open(path, busy_timeout=2.0) as other:
            jobtable.Runner(other, name="other").register("number", echo).enqueue(4)
        assert raised.value is not None


async def test_a_payload_that_is_not_json_fails_alone(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, name="r")
    numbers = runner.register("number", echo)
    store.engine.write(
        lambda q: q.insert_jobs(kind="number", jobs=[NewJob("bad", "{not json", now())], now=now())
    )
    good = numbers.enqueue(5)
    assert await runner.run_next() == "bad"
    assert await runner.run_next() == good
    failed = runner.get("bad")
    assert (failed.status, failed.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert numbers.get(good).result == 5
    assert [r.getMessage() for r in internal_errors(caplog)] == ["job failed"]


def with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


@pytest.fixture
def sql_ascii_url(pg_server: str) -> Iterator[str]:
    """The URL of a fresh SQL_ASCII database on the test server, dropped afterwards."""
    import psycopg
    from psycopg import sql

    name = f"jobtable_test_ascii_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "CREATE DATABASE {} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' "
                "TEMPLATE template0"
            ).format(sql.Identifier(name))
        )
    try:
        yield with_database(pg_server, name)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.mark.parametrize("column", ["payload", "kind"])
async def test_postgres_text_that_is_not_utf8_fails_alone_and_the_queue_goes_on(
    sql_ascii_url: str, column: str, caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    caplog.set_level(logging.INFO, logger="jobtable")
    with jobtable.Store.open(sql_ascii_url) as store:
        runner = jobtable.Runner(store, name="r")
        numbers = runner.register("number", echo)
        bad = "E'\\xff'"
        kind = bad if column == "kind" else "'number'"
        payload = bad if column == "payload" else "'1'"
        with psycopg.connect(sql_ascii_url, autocommit=True) as raw:
            raw.execute(
                "INSERT INTO jobs (id, kind, payload, run_at, created_at, updated_at) "
                f"VALUES ('bad', {kind}, {payload}, now(), now(), now())"
            )
        await runs_bad_row_alone_then_the_next(runner, numbers, column, caplog)


async def test_postgres_a_client_encoding_in_the_url_cannot_stop_the_queue(pg_url: str) -> None:
    # LATIN1 has no euro sign: a connection in that encoding makes the server
    # refuse, for the whole claim, the row that holds one.
    with jobtable.Store.open(f"{pg_url}&client_encoding=LATIN1") as store:
        runner = jobtable.Runner(store, name="r")

        async def shout(ctx: jobtable.JobContext[str], payload: str) -> str:
            return payload + "!"

        texts = runner.register("text", shout)
        job_id = texts.enqueue("5 €")
        assert await runner.run_next() == job_id
        assert texts.get(job_id).result == "5 €!"
