"""A database of schema version 11 opens, upgrades to version 15 and keeps every job.

Version 15 adds the jobs table's published and debounce_key columns and the
jobs_debounce index, in place on both engines (the version 11 schemas are
the fixtures of tests/fixtures). A job stored before the upgrade is kept,
having published nothing and holding no key, and a debounced enqueue works
on the upgraded database as on a new one.
"""

import datetime
import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
JOB = (
    "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at)"
    " VALUES ('old', 'note', 'queued', '\"kept\"', {t}, {t}, {t})"
)
note = jobtable.Kind("note", str, str)
quiet = jobtable.Debounce(quiet=datetime.timedelta(minutes=1), key="k")


def kept(store: jobtable.Store) -> None:
    """The job stored before the upgrade is kept, and the key's pending job absorbs an enqueue."""
    assert store.inspect("old").payload == "kept"
    first = note.enqueue(store, "a", debounce=quiet)
    assert note.enqueue(store, "b", debounce=quiet) == first
    assert store.inspect(first).payload == "b"


def test_a_version_11_sqlite_file_is_upgraded_to_15_keeping_every_job(
    tmp_path: pathlib.Path,
) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v11.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v11_sqlite.sql").read_text())
    conn.execute(JOB.replace("{t}", "?"), (T0, T0, T0))
    conn.execute("PRAGMA user_version = 11")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 15
        shape = "SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info('jobs')"
        indexes = "SELECT name FROM pragma_index_list('jobs')"
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert set(conn.execute(shape)) == set(new.execute(shape))
            assert set(conn.execute(indexes)) == set(new.execute(indexes))
        new.close()
        kept(store)
    conn.close()


def test_a_version_11_postgres_schema_is_upgraded_to_15_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v11_postgres.sql").read_text())
        conn.execute(JOB.replace("{t}", "%s"), (T0, T0, T0))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (11)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        assert SCHEMA_VERSION >= 15
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept(store)
