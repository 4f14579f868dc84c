"""A database of schema version 6 opens, upgrades to version 7 and keeps every job.

Version 7 adds job_steps, the recorded steps of jobs' handlers, and the jobs
table's delete trigger that deletes a job's steps with it. The version 6
schemas are checked in as fixtures (tests/fixtures), copied from the
release that wrote them.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
INSERT = "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at) VALUES "
STEP = "INSERT INTO job_steps (job_id, name, output, recorded_at, attempt) VALUES "


def sqlite_shape(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The columns of job_steps, and every index and trigger, by name."""
    columns = {
        tuple(map(str, row))
        for row in conn.execute(
            "SELECT name, type, \"notnull\", pk FROM pragma_table_info('job_steps')"
        )
    }
    named = conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('index', 'trigger')"
    ).fetchall()
    return columns | {tuple(map(str, row)) for row in named}


def make_sqlite(path: pathlib.Path, fixture: str, version: int) -> None:
    """A file of an older schema version holding one queued job, old-1."""
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / fixture).read_text())
    conn.execute(INSERT + "('old-1', 'ping', 'queued', '{\"n\": 1}', ?, ?, ?)", (T0, T0, T0))
    conn.execute(f"PRAGMA user_version = {version:d}")
    conn.commit()
    conn.close()


def steps_go_with_their_job(store: jobtable.Store, conn: sqlite3.Connection) -> None:
    """The old job is kept, with no step; a step of it is deleted with it."""
    assert store.inspect("old-1").payload == {"n": 1}
    assert conn.execute("SELECT count(*) FROM job_steps").fetchone() == (0,)
    conn.execute(STEP + "('old-1', 'fetch', '1', ?, 1)", (T0,))
    conn.commit()
    store.cancel("old-1")
    store.delete("old-1")
    assert conn.execute("SELECT count(*) FROM job_steps").fetchone() == (0,)


def test_a_version_6_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v6.db"
    make_sqlite(path, "schema_v6_sqlite.sql", 6)
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_shape(conn) == sqlite_shape(new)
        steps_go_with_their_job(store, conn)
    conn.close()


def test_a_version_1_sqlite_file_rebuilt_at_upgrade_gets_job_steps(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v1_sqlite.sql").read_text())
    conn.execute(
        "INSERT INTO jobs (id, kind, status, payload, created_at, updated_at)"
        " VALUES ('old-1', 'ping', 'queued', '{\"n\": 1}', ?, ?)",
        (T0, T0),
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_shape(conn) == sqlite_shape(new)
        steps_go_with_their_job(store, conn)
    conn.close()


def test_a_version_6_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v6_postgres.sql").read_text())
        conn.execute(INSERT + "('old-1', 'ping', 'queued', '{\"n\": 1}', %s, %s, %s)", (T0, T0, T0))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (6)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        assert store.inspect("old-1").payload == {"n": 1}
        conn.execute(STEP + "('old-1', 'fetch', '1', now(), 1)")
        store.cancel("old-1")
        store.delete("old-1")
        assert conn.execute("SELECT count(*) FROM job_steps").fetchone() == (0,)
