"""A database written by schema version 2 opens, upgrades to version 3 and keeps every job.

The version 2 schemas are checked in as fixtures (tests/fixtures), copied
from the release that wrote them. Version 3 adds nullable columns (unique
keys, trace context) and indexes, so every kept job is not unique, has no
trace context, and is listed through the new indexes.
"""

import asyncio
import pathlib
import sqlite3
from collections.abc import Callable

import jobtable
from jobtable._engines.sqlite.file import SCHEMA_VERSION

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

T0 = "2025-01-02T03:04:05.000001Z"
T1 = "2025-01-02T03:04:06.000002Z"
T2 = "2030-01-01T00:00:00.000000Z"

# (id, kind, queue, priority, status, payload, result, error, errors, runner, attempt,
#  max_attempts, timeout, scheduled, run_at, started_at, finished_at)
V2_JOBS = [
    ("q-1", "ping", "default", 0, "queued", '{"n": 1}', None, None, "[]", None, 0, 1, None, 0,
     T0, None, None),
    ("later-1", "ping", "mail", 5, "queued", '{"n": 2}', None, None, "[]", None, 0, 3, 2.5, 1,
     T2, None, None),
    ("run-1", "pong", "mail", 0, "running", '{"n": 3}', '{"n": 1}', None, "[]", "w1", 1, 1, None,
     0, T0, T1, None),
    ("ok-1", "pong", "default", 0, "succeeded", '{"n": 4}', '{"n": 4}', None, "[]", "w1", 1, 1,
     None, 0, T0, T1, T1),
    ("bad-1", "ping", "default", 0, "failed", '{"n": 5}', None, "nope",
     '[{"attempt": 1, "error": "nope", "at": "' + T1 + '"}]', "w1", 1, 1, None, 0, T0, T1, T1),
    ("gone-1", "ping", "default", 0, "cancelled", '{"n": 6}', None, None, "[]", None, 0, 1, None,
     0, T0, None, T1),
]  # fmt: skip

COLUMNS = (
    "id, kind, queue, priority, status, payload, result, error, errors, runner, attempt,"
    " max_attempts, timeout, scheduled, run_at, started_at, finished_at, created_at, updated_at"
)

# Indexes of version 3 (jobs_unique) and 10 (jobs_by_rare_status) on both engines.
V3_INDEXES = {"jobs_unique", "jobs_by_rare_status"}


def sqlite_indexes(path: pathlib.Path) -> dict[str, str]:
    """Each index of the file's jobs table, and the statement that created it."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'index'")
        return {name: sql for name, sql in rows if sql is not None}
    finally:
        conn.close()


def postgres_indexes(url: str) -> dict[str, str]:
    """Each index of the schema's tables and its definition, the schema's name left out."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT indexname, replace(indexdef, current_schema() || '.', '') FROM pg_indexes"
            " WHERE schemaname = current_schema()"
        ).fetchall()
    return dict(rows)


def check_kept(store: jobtable.Store) -> None:
    """Every version 2 job is there with its fields, and each filter of the listing finds it."""
    for job in V2_JOBS:
        job_id, kind, queue, priority, status, *_rest, max_attempts, timeout = job[:13]
        record = store.inspect(job_id)
        assert (record.kind, record.queue, record.priority) == (kind, queue, priority)
        assert (record.status, record.max_attempts, record.timeout) == (
            jobtable.Status(status),
            max_attempts,
            timeout,
        )
        assert record.error == job[7]
    assert [r.id for r in store.list_jobs(limit=100)] == [job[0] for job in reversed(V2_JOBS)]
    assert [r.id for r in store.list_jobs(kind="pong")] == ["ok-1", "run-1"]
    assert [r.id for r in store.list_jobs(queue="mail", status="queued")] == ["later-1"]
    assert [r.id for r in store.list_jobs(kind="ping", queue="default")] == [
        "gone-1",
        "bad-1",
        "q-1",
    ]


def run_one(store: jobtable.Store) -> None:
    """The kept queued job still runs."""
    runner = jobtable.Runner(store, workers=1)
    kind = jobtable.Kind("ping", dict[str, int], dict[str, int])

    @runner.handler(kind)
    async def handle(
        ctx: jobtable.JobContext[dict[str, int]], payload: dict[str, int]
    ) -> dict[str, int]:
        return payload

    assert asyncio.run(runner.run_next()) == "q-1"
    assert store.get("q-1").result == {"n": 1}


def test_a_version_2_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v2_sqlite.sql").read_text())
    conn.executemany(
        f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join(['?'] * 19)})",
        [(*job, T0, T1) for job in V2_JOBS],
    )
    conn.execute("INSERT INTO runners VALUES ('w1', ?, ?)", (T0, T1))
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with jobtable.Store.open(path) as store:
        check_kept(store)
        run_one(store)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute(
            "SELECT count(*) FROM jobs WHERE unique_key IS NULL AND unique_statuses IS NULL"
            " AND traceparent IS NULL"
        ).fetchone() == (len(V2_JOBS),)
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
        assert names >= V3_INDEXES
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    # The indexes are a new file's, jobs_finished's new condition too.
    jobtable.Store.open(tmp_path / "new.db").close()
    assert sqlite_indexes(path) == sqlite_indexes(tmp_path / "new.db")


def test_a_version_2_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION as PG_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v2_postgres.sql").read_text())
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join(['%s'] * 19)})",
                [(*job[:13], bool(job[13]), *job[14:], T0, T1) for job in V2_JOBS],
            )
        conn.execute("INSERT INTO runners VALUES ('w1', %s, %s)", (T0, T1))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (2)")
    with jobtable.Store.open(url) as store:
        check_kept(store)
        run_one(store)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (PG_VERSION,)
        assert PG_VERSION >= 3
        assert conn.execute(
            "SELECT count(*) FROM jobs WHERE unique_key IS NULL AND unique_statuses IS NULL"
            " AND traceparent IS NULL"
        ).fetchone() == (len(V2_JOBS),)
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        assert {row[0] for row in rows} >= V3_INDEXES
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    assert postgres_indexes(url) == postgres_indexes(fresh)
