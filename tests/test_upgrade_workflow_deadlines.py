"""A database of schema version 11 upgrades through 12 to 16 and keeps every workflow.

Version 16 adds the workflows table's deadline_at (nullable) and
deadline_done (a constant default) columns in place, and the index of
deadlines not yet acted on, on both engines. A workflow stored before the
upgrade is kept, with no deadline: no maintenance round ever cancels it.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
WORKFLOW = "INSERT INTO workflows (id, name, created_at) VALUES ('wf1', 'old', {t})"


def kept(store: jobtable.Store) -> None:
    """The workflow stored before the upgrade is listed."""
    assert [w.id for w in store.workflows()] == ["wf1"]


def sqlite_shape(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The workflows table's columns and indexes."""
    columns = conn.execute(
        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('workflows')"
    )
    indexes = conn.execute("SELECT name FROM pragma_index_list('workflows')")
    return {tuple(map(str, row)) for row in [*columns, *indexes]}


def test_a_version_11_sqlite_file_gets_the_deadline_columns_keeping_every_workflow(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "v11.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v11_sqlite.sql").read_text())
    conn.execute(WORKFLOW.replace("{t}", "?"), (T0,))
    conn.execute("PRAGMA user_version = 11")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store, sqlite3.connect(path) as conn:
        with sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_shape(conn) == sqlite_shape(new)
            assert ("workflows_deadlines",) in sqlite_shape(conn)
        kept(store)
    conn.close()


def test_a_version_11_postgres_schema_gets_the_deadline_columns_keeping_every_workflow(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v11_postgres.sql").read_text())
        conn.execute(WORKFLOW.replace("{t}", "%s"), (T0,))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (11)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept(store)
