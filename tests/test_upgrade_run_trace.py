"""A database of schema version 8 opens, upgrades to version 9 and keeps every job.

Version 9 adds the jobs table's nullable run_trace column, in place on both
engines. The version 8 schemas are checked in as fixtures (tests/fixtures),
copied from the release that wrote them. A workflow stored before the
upgrade keeps its dependencies: its pending job runs once its dependency
succeeds.
"""

import asyncio
import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable
from jobtable.testing import drain

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
JOBS = (
    "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at, tags,"
    " workflow_id, pending_deps) VALUES "
    "('old-1', 'ping', 'queued', '{\"n\": 1}', {t}, {t}, {t}, '[\"t\"]', 'wf-1', 0),"
    "('old-2', 'ping', 'pending', '{\"n\": 2}', {t}, {t}, {t}, '[]', 'wf-1', 1)"
)
WORKFLOW = "INSERT INTO workflows (id, name, created_at) VALUES ('wf-1', 'before', {t})"
DEPS = "INSERT INTO job_deps (dep, job) VALUES ('old-1', 'old-2')"
ping = jobtable.Kind("ping", dict[str, int], int)


def kept_and_the_workflow_runs(store: jobtable.Store) -> None:
    """Both old jobs are kept in their workflow, and the pending one runs after the other."""
    record = store.inspect("old-1")
    assert (record.payload, record.tags) == ({"n": 1}, ["t"])
    assert record.workflow is not None
    assert (record.workflow.id, record.workflow.name) == ("wf-1", "before")
    assert [job.id for job in record.workflow.dependents] == ["old-2"]
    assert store.get("old-2").status is jobtable.Status.PENDING
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(ping)
    async def count(ctx: jobtable.JobContext[int], payload: dict[str, int]) -> int:
        return payload["n"]

    ran = asyncio.run(drain(runner))
    assert [r.id for r in ran] == ["old-1", "old-2"]
    assert store.engine.read(lambda q: q.dependency_traces(job="old-2")) == []


def sqlite_columns(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The jobs table's columns, and every index and trigger, by name."""
    columns = {
        tuple(map(str, row))
        for row in conn.execute(
            "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('jobs')"
        )
    }
    named = conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('index', 'trigger')"
    ).fetchall()
    return columns | {tuple(map(str, row)) for row in named}


def test_a_version_8_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v8.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v8_sqlite.sql").read_text())
    for statement in (JOBS, WORKFLOW, DEPS):
        conn.execute(statement.replace("{t}", "?"), (T0,) * statement.count("{t}"))
    conn.execute("PRAGMA user_version = 8")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_columns(conn) == sqlite_columns(new)
        kept_and_the_workflow_runs(store)
    conn.close()


def test_a_version_8_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v8_postgres.sql").read_text())
        for statement in (JOBS, WORKFLOW, DEPS):
            conn.execute(statement.replace("{t}", "%s"), (T0,) * statement.count("{t}"))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (8)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept_and_the_workflow_runs(store)
