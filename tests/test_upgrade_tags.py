"""A database of schema version 5 opens, upgrades to the latest version and keeps every job.

Version 6 adds the jobs table's tags and meta and the job_tags side table,
filled by the jobs table's insert trigger: a job stored before the upgrade
has no tag and no metadata; one stored after is listed by its tags. The
version 5 schemas are checked in as fixtures (tests/fixtures), copied from
the release that wrote them.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable
from jobtable._engines.sqlite.file import SCHEMA_VERSION

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
INSERT = "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at) VALUES "


def use_upgraded(store: jobtable.Store) -> None:
    """The old job has no tag and no meta; a new tagged job is listed by its tag, and deleted."""
    old = store.inspect("old-1")
    assert (old.kind, old.payload, old.tags, old.meta) == ("ping", {"n": 1}, [], {})
    kind = jobtable.Kind("ping", dict[str, int], int)
    new = kind.enqueue(store, {"n": 2}, tags=["after"], meta={"who": "ops"})
    assert [r.id for r in store.list_jobs(tag="after")] == [new]
    assert store.inspect(new).meta == {"who": "ops"}
    store.cancel(new)
    store.delete(new)
    assert store.list_jobs(tag="after") == []
    assert [r.id for r in store.list_jobs()] == ["old-1"]


def sqlite_shape(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The columns of jobs and job_tags, and every index and trigger, by name."""
    columns = {
        (table, *map(str, row))
        for table in ("jobs", "job_tags")
        for row in conn.execute(
            f"SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info('{table}')"
        )
    }
    named = conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('index', 'trigger')"
    ).fetchall()
    return columns | {tuple(map(str, row)) for row in named}


def test_a_version_5_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "v5.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v5_sqlite.sql").read_text())
    conn.execute(INSERT + "('old-1', 'ping', 'queued', '{\"n\": 1}', ?, ?, ?)", (T0, T0, T0))
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    with jobtable.Store.open(path) as store:
        use_upgraded(store)
    jobtable.Store.open(tmp_path / "new.db").close()
    conn, new = sqlite3.connect(path), sqlite3.connect(tmp_path / "new.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert sqlite_shape(conn) == sqlite_shape(new)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
        new.close()


def test_a_version_1_sqlite_file_rebuilt_at_upgrade_gets_the_tag_triggers(
    tmp_path: pathlib.Path,
) -> None:
    """The step from version 1 rebuilds the jobs table as the latest has it, with job_tags."""
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
    with jobtable.Store.open(path) as store:
        use_upgraded(store)
    jobtable.Store.open(tmp_path / "new.db").close()
    conn, new = sqlite3.connect(path), sqlite3.connect(tmp_path / "new.db")
    try:
        assert sqlite_shape(conn) == sqlite_shape(new)
    finally:
        conn.close()
        new.close()


def test_a_version_5_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION as PG_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v5_postgres.sql").read_text())
        conn.execute(INSERT + "('old-1', 'ping', 'queued', '{\"n\": 1}', %s, %s, %s)", (T0, T0, T0))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (5)")
    with jobtable.Store.open(url) as store:
        use_upgraded(store)
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with psycopg.connect(url, autocommit=True) as conn, psycopg.connect(fresh) as new:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (PG_VERSION,)
        assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
