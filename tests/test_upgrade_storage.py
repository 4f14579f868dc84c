"""Schema version 11: the PostgreSQL jobs table's autovacuum parameters.

A fresh schema has them (postgres/schema.sql); a version 10 schema (today's
without them) gets the same ones when it opens, keeping every job. A SQLite
file of version 10 only records the new version: its tables are unchanged.
Each version 10 schema is today's without version 12's runners column too
(and the PostgreSQL one without version 15's jobs columns and index), which
the upgrade adds back.
"""

import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any

from test_upgrade_job_steps import sqlite_shape

import jobtable

PARAMETERS = (
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_cost_delay",
    "autovacuum_analyze_scale_factor",
)
ping = jobtable.Kind("ping", dict[str, int], int)


def reloptions(conn: Any) -> list[str] | None:
    row = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass").fetchone()
    return None if row[0] is None else sorted(row[0])


def test_a_fresh_postgres_schema_sets_the_jobs_autovacuum_parameters(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    url = new_pg_url()
    jobtable.Store.open(url).close()
    with psycopg.connect(url) as conn:
        assert reloptions(conn) == [
            "autovacuum_analyze_scale_factor=0.02",
            "autovacuum_vacuum_cost_delay=0",
            "autovacuum_vacuum_scale_factor=0.01",
            "autovacuum_vacuum_threshold=1000",
        ]


def test_a_version_10_postgres_schema_gets_them_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with jobtable.Store.open(url) as store:
        job_id = ping.enqueue(store, {"n": 1})
    with psycopg.connect(url, autocommit=True) as conn:
        fresh = reloptions(conn)
        conn.execute(f"ALTER TABLE jobs RESET ({', '.join(PARAMETERS)})")
        conn.execute("ALTER TABLE runners DROP COLUMN missing_keys")
        conn.execute("DROP INDEX jobs_debounce")
        conn.execute("ALTER TABLE jobs DROP COLUMN published, DROP COLUMN debounce_key")
        conn.execute("UPDATE jobtable_schema SET version = 10")
        assert reloptions(conn) is None
    with jobtable.Store.open(url) as store, psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        assert SCHEMA_VERSION >= 11
        assert reloptions(conn) == fresh
        assert store.inspect(job_id).payload == {"n": 1}


def test_a_version_10_sqlite_file_only_records_version_11(tmp_path: pathlib.Path) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v10.db"
    with jobtable.Store.open(path) as store:
        job_id = ping.enqueue(store, {"n": 1})
    with sqlite3.connect(path) as conn:
        before = sqlite_shape(conn)
        conn.execute("ALTER TABLE runners DROP COLUMN missing_keys")
        # Version 15's jobs columns stay: the step to 15 adds only what a
        # file lacks (tests/test_upgrade_debounce.py upgrades one without them).
        conn.execute("PRAGMA user_version = 10")
    conn.close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 11
        assert sqlite_shape(conn) == before
        assert store.inspect(job_id).payload == {"n": 1}
    conn.close()
