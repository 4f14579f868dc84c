"""A database of schema version 16 upgrades to 17, keeps every workflow, and limits new ones.

Version 17 adds the workflows table's concurrency and slot columns
(nullable) in place, the index of the workflows holding or waiting for a
slot, and the triggers that free and admit them, on both engines. A
workflow stored before the upgrade is kept, with no limit; the step may run
again on a schema that has what it makes.
"""

import pathlib
import sqlite3
from collections.abc import Callable

from schema_shape import PG_SHAPE

import jobtable
from jobtable._engines.sqlite.engine import _SCHEMA
from jobtable._engines.sqlite.upgrade_steps import UPGRADES

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
T0 = "2025-01-02T03:04:05.000001Z"
WORKFLOW = "INSERT INTO workflows (id, name, created_at) VALUES ('wf1', 'old', {t})"
step = jobtable.Kind("upgraded_step", str, str)


def kept_and_limited(store: jobtable.Store) -> None:
    """The old workflow is listed; a limited workflow beyond its limit waits, and is admitted."""
    assert [w.id for w in store.workflows()] == ["wf1"]
    flows = [jobtable.Workflow("new", concurrency=1) for _ in range(2)]
    nodes = [wf.add(step, "x") for wf in flows]
    for wf in flows:
        wf.enqueue(store)
    assert store.inspect(nodes[1].id).status == jobtable.Status.PENDING
    store.cancel_workflow(flows[0].id)
    assert store.inspect(nodes[1].id).status == jobtable.Status.QUEUED


def sqlite_shape(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The workflows table's columns and indexes, and the triggers on jobs."""
    columns = conn.execute(
        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('workflows')"
    )
    indexes = conn.execute("SELECT name FROM pragma_index_list('workflows')")
    triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    return {tuple(map(str, row)) for row in [*columns, *indexes, *triggers]}


def test_a_version_16_sqlite_file_gets_the_slot_columns_and_triggers(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "v16.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v16_sqlite.sql").read_text())
    conn.execute(WORKFLOW.replace("{t}", "?"), (T0,))
    conn.execute("PRAGMA user_version = 16")
    conn.commit()
    conn.close()
    jobtable.Store.open(tmp_path / "new.db").close()
    with jobtable.Store.open(path) as store:
        with sqlite3.connect(path) as conn, sqlite3.connect(tmp_path / "new.db") as new:
            assert sqlite_shape(conn) == sqlite_shape(new)
            assert ("jobs_workflow_slot_end",) in sqlite_shape(conn)
        conn.close()
        kept_and_limited(store)
    # The step runs again on the upgraded file, changing nothing.
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        before = sqlite_shape(conn)
        conn.execute("BEGIN")
        assert UPGRADES[16](_SCHEMA, conn) == 17
        conn.execute("COMMIT")
        assert sqlite_shape(conn) == before
    finally:
        conn.close()


def test_a_version_16_postgres_schema_gets_the_slot_columns_and_triggers(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.upgrades import upgrade_to_v17

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v16_postgres.sql").read_text())
        conn.execute(WORKFLOW.replace("{t}", "%s"), (T0,))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (16)")
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    with jobtable.Store.open(url) as store, psycopg.connect(url, autocommit=True) as conn:
        with psycopg.connect(fresh) as new:
            assert set(conn.execute(PG_SHAPE).fetchall()) == set(new.execute(PG_SHAPE).fetchall())
        kept_and_limited(store)
        # The step runs again on the upgraded schema, changing nothing.
        before = set(conn.execute(PG_SHAPE).fetchall())
        with conn.transaction():
            upgrade_to_v17(conn)
        assert set(conn.execute(PG_SHAPE).fetchall()) == before
