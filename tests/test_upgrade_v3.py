"""A database written by schema version 3 upgrades to the latest version, keeping every job.

The version 3 schemas are checked in as fixtures (tests/fixtures), copied
from the release that wrote them. Version 4 adds the jobs' partition and
sequence columns (null, and not blocking, for every kept job), two partial
indexes and the queues and queue_starts tables, so every kept queue is
without flow control and claims as before; the upgraded schema equals a new
one.
"""

import asyncio
import pathlib
import sqlite3
from collections.abc import Callable

import jobtable
from jobtable._engines.sqlite.file import SCHEMA_VERSION

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"

COLUMNS = "id, kind, queue, status, payload, run_at, created_at, updated_at"
V3_JOBS = [
    ("q-1", "ping", "default", "queued", '{"n": 1}', T0, T0, T0),
    ("q-2", "ping", "default", "queued", '{"n": 2}', T0, T0, T0),
    ("ok-1", "ping", "default", "succeeded", '{"n": 3}', T0, T0, T0),
]


def run_kept_then_limited(store: jobtable.Store) -> None:
    """The kept jobs run as before; a limit set after the upgrade holds."""
    kind = jobtable.Kind("ping", dict[str, int], dict[str, int])
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(kind)
    async def handle(
        ctx: jobtable.JobContext[dict[str, int]], payload: dict[str, int]
    ) -> dict[str, int]:
        return payload

    assert asyncio.run(runner.run_next()) == "q-1"
    store.pause("default")
    assert asyncio.run(runner.run_next()) is None
    assert store.inspect("q-2").waiting is jobtable.WaitReason.PAUSED
    store.resume("default")
    assert asyncio.run(runner.run_next()) == "q-2"


def sqlite_schema(path: pathlib.Path) -> set[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")
        return set(rows)
    finally:
        conn.close()


def test_a_version_3_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v3_sqlite.sql").read_text())
    conn.executemany(f"INSERT INTO jobs ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", V3_JOBS)
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with jobtable.Store.open(path) as store:
        run_kept_then_limited(store)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute(
            "SELECT count(*) FROM jobs WHERE partition_key IS NULL AND sequence_key IS NULL"
            " AND sequence_blocks = 0"
        ).fetchone() == (len(V3_JOBS),)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    fresh = tmp_path / "fresh.db"
    jobtable.Store.open(fresh).close()
    assert sqlite_schema(path) == sqlite_schema(fresh)


def postgres_schema(url: str) -> set[tuple[str, str]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        indexes = conn.execute(
            "SELECT indexname, replace(indexdef, current_schema() || '.', '') FROM pg_indexes"
            " WHERE schemaname = current_schema()"
        ).fetchall()
        columns = conn.execute(
            "SELECT table_name || '.' || column_name, data_type || ' ' || is_nullable"
            " || coalesce(' ' || column_default, '') FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        ).fetchall()
    return {*indexes, *columns}


def test_a_version_3_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION as PG_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v3_postgres.sql").read_text())
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join(['%s'] * 8)})", V3_JOBS
            )
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (3)")
    with jobtable.Store.open(url) as store:
        run_kept_then_limited(store)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (PG_VERSION,)
        assert PG_VERSION >= 4
        assert conn.execute(
            "SELECT count(*) FROM jobs WHERE partition_key IS NULL AND sequence_key IS NULL"
            " AND NOT sequence_blocks"
        ).fetchone() == (len(V3_JOBS),)
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    assert postgres_schema(url) == postgres_schema(fresh)
