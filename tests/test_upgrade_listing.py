"""A database of schema version 8 opens, upgrades to version 10 and keeps every job.

Version 10 replaces the listing's indexes keyed by status, which a claim and
a finish each moved: SQLite's jobs_by_status, jobs_by_status_kind and
jobs_by_status_queue give way to jobs_by_kind, jobs_by_queue and the
jobs_by_rare_status indexes; PostgreSQL's jobs_by_status to
jobs_by_rare_status, and its planner gets the statistics of status, kind and
queue together. The version 8 schemas are checked in as fixtures
(tests/fixtures), copied from the release that wrote them.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
INSERT = (
    "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at, created_at, updated_at)"
    " VALUES "
)
# (id, kind, queue, status, error) of the jobs the old database holds.
JOBS = [
    (f"old-{n}", ("report", "ping")[n % 2], ("mail", "default")[n // 2 % 2], status, error)
    for n, (status, error) in enumerate(
        [("queued", None), ("succeeded", None), ("failed", "x"), ("cancelled", None)] * 3
    )
]


def listed_as_before(store: jobtable.Store) -> None:
    """Every filter lists the old jobs it matches, newest first."""
    for status in (None, "queued", "succeeded", "failed", "cancelled"):
        for kind in (None, "report"):
            for queue in (None, "mail"):
                want = [
                    job_id
                    for job_id, k, q, s, _ in reversed(JOBS)
                    if status in (None, s) and kind in (None, k) and queue in (None, q)
                ]
                got = store.list_jobs(status=status, kind=kind, queue=queue)
                assert [r.id for r in got] == want, (status, kind, queue)


def sqlite_indexes(path: pathlib.Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'index'")
        return {name: sql for name, sql in rows if sql is not None}


def test_a_version_8_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v8.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v8_sqlite.sql").read_text())
    conn.executemany(INSERT + f"(?, ?, ?, ?, ?, '{{}}', '{T0}', '{T0}', '{T0}')", JOBS)
    conn.execute("PRAGMA user_version = 8")
    conn.commit()
    conn.close()
    assert "jobs_by_status_kind" in sqlite_indexes(path)
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store:
        listed_as_before(store)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # The indexes are a new file's: the old three gone, the new ones as schema.sql has them.
    assert sqlite_indexes(path) == sqlite_indexes(tmp_path / "new.db")
    assert "jobs_by_status_kind" not in sqlite_indexes(path)


def test_a_version_8_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v8_postgres.sql").read_text())
        with conn.cursor() as cur:
            cur.executemany(
                INSERT + "(%s, %s, %s, %s, %s, '{}', %s, %s, %s)",
                [(*job, T0, T0, T0) for job in JOBS],
            )
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (8)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store:
        listed_as_before(store)
    with psycopg.connect(url, autocommit=True) as conn, psycopg.connect(fresh) as new:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        names = {row[1] for row in conn.execute(PG_SHAPE).fetchall() if row[0] == "index"}
        assert "jobs_by_rare_status" in names
        assert "jobs_by_status" not in names
        statistics = (
            "SELECT stxname FROM pg_statistic_ext"
            " WHERE stxnamespace = current_schema()::regnamespace"
        )
        assert conn.execute(statistics).fetchall() == new.execute(statistics).fetchall()
        assert conn.execute(statistics).fetchall() == [("jobs_listing",)]
