"""A database of schema version 11 opens, upgrades to version 12 and keeps every runner.

Version 12 adds the runners table's nullable missing_keys column, in place on
both engines. The version 11 schemas are checked in as fixtures
(tests/fixtures), copied from the release that wrote them. A runner
registered before the upgrade is kept and reports no missing key.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
RUNNER = (
    "INSERT INTO runners (name, started_at, heartbeat_at, host, process)"
    " VALUES ('old', {t}, {t}, NULL, NULL)"
)


def kept(store: jobtable.Store) -> None:
    """The runner registered before the upgrade is listed, with no missing key."""
    [runner] = store.runners()
    assert (runner.name, runner.alive, runner.missing_keys) == ("old", False, [])


def sqlite_columns(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The runners table's columns."""
    return {
        tuple(map(str, row))
        for row in conn.execute(
            "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('runners')"
        )
    }


def test_a_version_11_sqlite_file_is_upgraded_keeping_every_runner(
    tmp_path: pathlib.Path,
) -> None:
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    path = tmp_path / "v11.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v11_sqlite.sql").read_text())
    conn.execute(RUNNER.replace("{t}", "?"), (T0, T0))
    conn.execute("PRAGMA user_version = 11")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 12
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_columns(conn) == sqlite_columns(new)
        kept(store)
    conn.close()


def test_a_version_11_postgres_schema_is_upgraded_keeping_every_runner(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v11_postgres.sql").read_text())
        conn.execute(RUNNER.replace("{t}", "%s"), (T0, T0))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (11)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (SCHEMA_VERSION,)
        assert SCHEMA_VERSION >= 12
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept(store)
