"""A database of schema version 12 opens, upgrades to version 14 and keeps every job.

Version 14 adds signals and job_waits (durable waiting) beside the other
tables, on both engines; version 13 is another change's, which takes no
step here yet. The version 12 schemas are checked in as fixtures
(tests/fixtures), copied from the release that wrote them. A job stored
before the upgrade is kept, and signals can be sent after it.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from pydantic import BaseModel
from schema_shape import PG_SHAPE

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
JOB = (
    "INSERT INTO jobs (id, kind, payload, run_at, created_at, updated_at)"
    " VALUES ('old-job', 'kept', '1', {t}, {t}, {t})"
)


class Go(BaseModel):
    word: str


GO = jobtable.Signal("go", Go)


def sqlite_shape(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """Every table, index and trigger of the file with its columns, as text."""
    rows = conn.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
    shape = {tuple(map(str, row)) for row in rows if not str(row[1]).startswith("sqlite_")}
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        columns = conn.execute(f"SELECT name, type, \"notnull\" FROM pragma_table_info('{table}')")
        shape |= {(table, *map(str, column)) for column in columns}
    return shape


def kept(store: jobtable.Store) -> None:
    """The job stored before the upgrade is queued as it was, and a signal can be sent."""
    assert store.get("old-job").status is jobtable.Status.QUEUED
    assert store.signal_wait("old-job") is None
    assert store.signal(GO, "after-upgrade", Go(word="go")) == 0


def test_a_version_12_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v12.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v12_sqlite.sql").read_text())
    conn.execute(JOB.replace("{t}", "?"), (T0, T0, T0))
    conn.execute("PRAGMA user_version = 12")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 14
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_shape(conn) == sqlite_shape(new)
        kept(store)
    conn.close()


def test_a_version_12_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v12_postgres.sql").read_text())
        conn.execute(JOB.replace("{t}", "%s"), (T0, T0, T0))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (12)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        assert SCHEMA_VERSION >= 14
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept(store)
