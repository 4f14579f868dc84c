"""A store whose tables differ from its schema version's is refused at open and after an upgrade.

The version number alone is not trusted: a store recording the current
version (or an older one, once upgraded) whose jobs table lacks a column, an
index, or has a column of another type is refused with a StoreError naming
each difference, and nothing in it is changed. What the application added
(a column, an index, a table of its own) is left alone.
"""

import pathlib
import re
import sqlite3
from collections.abc import Callable

import psycopg
import pytest

import jobtable
from jobtable._engines.sqlite.file import SCHEMA_VERSION as SQLITE_VERSION
from jobtable._engines.tables import Column, Table, differences

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
LATEST = SQLITE_VERSION
"""The schema version this library writes (both engines' are the same)."""
ping = jobtable.Kind("ping", int, int)


def alter(target: str, engine: str, sqlite_sql: str, postgres_sql: str) -> None:
    """Runs the engine's statements on the store at target, outside jobtable."""
    if engine == "sqlite":
        conn = sqlite3.connect(target, isolation_level=None)
        try:
            conn.executescript(sqlite_sql)
        finally:
            conn.close()
    else:
        with psycopg.connect(target, autocommit=True) as pg:
            pg.execute(postgres_sql.encode())


def version_of(target: str, engine: str) -> int:
    if engine == "sqlite":
        conn = sqlite3.connect(target)
        try:
            version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        finally:
            conn.close()
        return version
    with psycopg.connect(target) as pg:
        row = pg.execute("SELECT version FROM jobtable_schema").fetchone()
        assert row is not None
        found: int = row[0]
        return found


def test_a_current_store_lacking_a_column_is_refused_at_open_naming_it(
    store_target: str, engine: str
) -> None:
    jobtable.Store.open(store_target).close()
    alter(
        store_target,
        engine,
        "DROP INDEX jobs_queued; DROP INDEX jobs_scheduled; DROP INDEX jobs_partition;"
        # The triggers that admit a limited workflow set scheduled: SQLite
        # refuses to drop a column a trigger names.
        "DROP TRIGGER jobs_workflow_slot_end; DROP TRIGGER jobs_workflow_slot_delete;"
        "ALTER TABLE jobs DROP COLUMN scheduled;",
        "ALTER TABLE jobs DROP COLUMN scheduled CASCADE;",
    )
    for open_it in (
        lambda: jobtable.Store.open(store_target),
        lambda: jobtable.Store.open(store_target, migrate=False),
        lambda: jobtable.Store.migrate(store_target),
    ):
        with pytest.raises(jobtable.StoreError) as raised:
            open_it()
        message = str(raised.value)
        assert f"its tables differ from those of its schema version {LATEST}" in message
        assert "jobs: missing column scheduled" in message
        assert "jobs: missing index jobs_queued" in message
        assert "jobs: missing index jobs_scheduled" in message
        assert "the database is left as it is" in message
    assert version_of(store_target, engine) == LATEST


def test_a_version_2_store_lacking_a_column_is_refused_and_its_upgrade_rolled_back(
    store_target: str, engine: str
) -> None:
    fixture = FIXTURES / f"schema_v2_{engine}.sql"
    alter(
        store_target,
        engine,
        fixture.read_text() + "ALTER TABLE jobs DROP COLUMN errors; PRAGMA user_version = 2;",
        fixture.read_text() + "; ALTER TABLE jobs DROP COLUMN errors;"
        "INSERT INTO jobtable_schema (version) VALUES (2);",
    )
    with pytest.raises(jobtable.StoreError) as raised:
        jobtable.Store.open(store_target)
    message = str(raised.value)
    assert re.search(r"upgraded from schema version 2, differ from those of version \d+", message)
    assert "jobs: missing column errors" in message
    assert version_of(store_target, engine) == 2
    with pytest.raises(jobtable.StoreError, match="missing column errors"):
        jobtable.Store.migrate(store_target)
    assert version_of(store_target, engine) == 2


def test_a_missing_index_is_refused_naming_it(store_target: str, engine: str) -> None:
    jobtable.Store.open(store_target).close()
    alter(store_target, engine, "DROP INDEX jobs_unique;", "DROP INDEX jobs_unique;")
    with pytest.raises(jobtable.StoreError, match=r"jobs: missing index jobs_unique;"):
        jobtable.Store.open(store_target)


@pytest.mark.postgres
def test_a_column_of_another_type_or_nullability_is_refused_naming_it(pg_url: str) -> None:
    jobtable.Store.open(pg_url).close()
    alter(
        pg_url,
        "postgres",
        "",
        "ALTER TABLE jobs ALTER COLUMN timeout TYPE real;"
        "ALTER TABLE jobs ALTER COLUMN errors DROP NOT NULL;",
    )
    with pytest.raises(jobtable.StoreError) as raised:
        jobtable.Store.open(pg_url)
    message = str(raised.value)
    assert "jobs: column timeout is REAL, want DOUBLE PRECISION" in message
    assert "jobs: column errors is not NOT NULL" in message


def test_what_the_application_added_is_left_alone(store_target: str, engine: str) -> None:
    jobtable.Store.open(store_target).close()
    alter(
        store_target,
        engine,
        "ALTER TABLE jobs ADD COLUMN note TEXT; CREATE INDEX app_jobs_note ON jobs (note);"
        "CREATE TABLE app_things (id INTEGER PRIMARY KEY);",
        "ALTER TABLE jobs ADD COLUMN note text; CREATE INDEX app_jobs_note ON jobs (note);"
        "CREATE TABLE app_things (id integer PRIMARY KEY);",
    )
    with jobtable.Store.open(store_target) as store:
        assert store.get(ping.enqueue(store, 1)).status == jobtable.Status.QUEUED


def test_differences_name_each_table_column_and_index() -> None:
    want = {
        "jobs": Table({"a": Column("TEXT", True), "b": Column("INTEGER", False)}, frozenset({"i"})),
        "runners": Table({"name": Column("TEXT", True)}, frozenset()),
    }
    have: dict[str, Table] = {
        "jobs": Table({"a": Column("INTEGER", False)}, frozenset({"other"})),
        "runners": Table({}, frozenset()),
    }
    assert differences(want, have) == [
        "jobs: column a is INTEGER, want TEXT",
        "jobs: column a is not NOT NULL",
        "jobs: missing column b",
        "jobs: missing index i",
        "missing table runners",
    ]
    assert differences(want, want) == []


def test_opening_a_current_store_reads_one_catalog_query_per_table(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobtable._engines.sqlite import file

    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    jobtable.Store.open(path).close()  # the reference, made once per process, is made by now
    described: list[str] = []
    real: Callable[[sqlite3.Connection, str], Table] = file._describe

    def describe(conn: sqlite3.Connection, table: str) -> Table:
        described.append(table)
        return real(conn, table)

    monkeypatch.setattr(file, "_describe", describe)
    jobtable.Store.open(path).close()
    assert sorted(described) == [
        "job_deps",
        "job_steps",
        "job_tags",
        "job_waits",
        "jobs",
        "queue_starts",
        "queues",
        "runners",
        "signals",
        # signals' AUTOINCREMENT keeps its last id here.
        "sqlite_sequence",
        "workflows",
    ]
