"""A database of schema version 7 opens, upgrades to version 8 and keeps every job.

Version 8 adds the pending status (SQLite rebuilds the jobs table for its
CHECK), the jobs table's workflow columns, workflows and job_deps. The
version 7 schemas are checked in as fixtures (tests/fixtures), copied from
the release that wrote them.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE
from test_upgrade_job_steps import sqlite_shape

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
INSERT = (
    "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at, tags) VALUES "
)
ping = jobtable.Kind("ping", dict[str, int], int)


def kept_and_workflows_work(store: jobtable.Store) -> None:
    """The old job is kept with its tag, in no workflow; a workflow's job can wait pending."""
    record = store.inspect("old-1")
    assert (record.payload, record.tags, record.workflow) == ({"n": 1}, ["t"], None)
    assert store.list_jobs(tag="t")[0].id == "old-1"
    wf = jobtable.Workflow("after-upgrade")
    first = wf.add(ping, {"n": 2})
    second = wf.add(ping, {"n": 3}, after=[first])
    wf.enqueue(store)
    assert store.get(second.id).status is jobtable.Status.PENDING


def test_a_version_7_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v7.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v7_sqlite.sql").read_text())
    conn.execute(
        INSERT + "('old-1', 'ping', 'queued', '{\"n\": 1}', ?, ?, ?, '[\"t\"]')", (T0,) * 3
    )
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_shape(conn) == sqlite_shape(new)
        kept_and_workflows_work(store)
    conn.close()


def test_a_version_7_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v7_postgres.sql").read_text())
        conn.execute(
            INSERT + "('old-1', 'ping', 'queued', '{\"n\": 1}', %s, %s, %s, '[\"t\"]')", (T0,) * 3
        )
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (7)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept_and_workflows_work(store)
