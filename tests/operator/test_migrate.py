"""Explicit migration: open(migrate=False) refuses a missing or older schema; migrate upgrades.

Each test runs on every engine: a SQLite file, and a schema of its own on
the PostgreSQL server. The older schema is version 1, from the fixtures the
upgrade tests use.
"""

import pathlib
import sqlite3
from collections.abc import Callable

import pytest

import jobtable

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def older_target(engine: str, store_target: str) -> str:
    """A store_target holding an empty version 1 schema."""
    if engine == "sqlite":
        conn = sqlite3.connect(store_target)
        conn.executescript((FIXTURES / "schema_v1_sqlite.sql").read_text())
        conn.execute("PRAGMA user_version = 1")
        conn.commit()
        conn.close()
        return store_target
    import psycopg

    with psycopg.connect(store_target, autocommit=True) as server:
        server.execute((FIXTURES / "schema_v1_postgres.sql").read_text())
        server.execute("INSERT INTO jobtable_schema (version) VALUES (1)")
    return store_target


def test_open_without_migrate_refuses_a_missing_schema_and_creates_nothing(
    store_target: str,
) -> None:
    with pytest.raises(jobtable.StoreError, match=r"no jobtable schema.*jobtable migrate"):
        jobtable.Store.open(store_target, migrate=False)
    state = jobtable.Store.schema_state(store_target)
    assert (state.version, state.pending) == (0, True)
    if "://" not in store_target:
        assert not pathlib.Path(store_target).exists()


def test_open_without_migrate_refuses_an_older_schema_and_leaves_it(older_target: str) -> None:
    with pytest.raises(jobtable.StoreError, match=r"version 1 is older.*jobtable migrate"):
        jobtable.Store.open(older_target, migrate=False)
    assert jobtable.Store.schema_state(older_target).version == 1


def test_migrate_upgrades_and_then_open_without_migrate_works(older_target: str) -> None:
    found = jobtable.Store.migrate(older_target)
    assert (found.version, found.pending) == (1, True)
    assert found.latest > 1
    state = jobtable.Store.schema_state(older_target)
    assert state == jobtable.SchemaState(version=found.latest, latest=found.latest, pending=False)
    with jobtable.Store.open(older_target, migrate=False) as store:
        assert store.counts() == {}
    assert jobtable.Store.migrate(older_target).pending is False


async def test_the_async_forms_read_and_migrate(store_target: str) -> None:
    assert (await jobtable.Store.aschema_state(store_target)).pending
    assert (await jobtable.Store.amigrate(store_target)).version == 0
    assert not (await jobtable.Store.aschema_state(store_target)).pending


def test_schema_state_refuses_what_open_refuses(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "not.db"
    path.write_text("plain text, not a database")
    with pytest.raises(jobtable.StoreError, match="not a SQLite database"):
        jobtable.Store.schema_state(path)
    with pytest.raises(jobtable.StoreError, match="want a file path"):
        jobtable.Store.schema_state("mysql://u:pw@host/db")


def test_a_postgres_schema_state_never_creates_the_search_path_schema(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()
        assert schema is not None
        conn.execute(f'DROP SCHEMA "{schema[0]}"')
    assert jobtable.Store.schema_state(url).version == 0
    with pytest.raises(jobtable.StoreError, match="no jobtable schema"):
        jobtable.Store.open(url, migrate=False)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT current_schema()").fetchone() == (None,)
        conn.execute(f'CREATE SCHEMA "{schema[0]}"')  # for the fixture to drop
