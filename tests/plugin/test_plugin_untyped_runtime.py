"""Values sqlc infers no type for run as object, and max()/min() keep their column's type.

They use the golden packages of the sqlite_untyped and postgres_untyped
cases on a real SQLite file and a real PostgreSQL server.
"""

import datetime
import decimal
import os
import pathlib
import secrets
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator

import psycopg
import pytest
from plugin_harness import CASES, PLUGIN_DIR, run_sqlc, sqlc_env, tool, write_case
from postgres_untyped import readings as pg_readings
from sqlite_untyped import readings, schema

AWARE = datetime.datetime(2024, 2, 29, 23, 59, 58, tzinfo=datetime.UTC)


@pytest.fixture
def querier(tmp_path: pathlib.Path) -> Iterator[readings.Querier]:
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    conn.executescript(schema.SCHEMA)
    yield readings.Querier(conn)
    conn.close()


def test_sqlite_max_and_min_of_an_empty_table_are_none(querier: readings.Querier) -> None:
    row = querier.extremes()
    assert row == readings.ExtremesRow(top=None, cheapest=None, any_done=None)


def test_sqlite_max_and_min_have_their_columns_types(querier: readings.Querier) -> None:
    for value, price, done in [(3, "1.50", False), (7, "0.25", True)]:
        querier.add_reading(
            value=value, price=decimal.Decimal(price), done=done, note=None, loose=None, doc=None
        )
    row = querier.extremes()
    assert row == readings.ExtremesRow(top=7, cheapest=decimal.Decimal("0.25"), any_done=True)
    assert isinstance(row.any_done, bool)
    assert querier.highest() == readings.HighestRow(max=7)


def test_sqlite_untyped_values_come_back_as_the_driver_gives_them(
    querier: readings.Querier,
) -> None:
    querier.add_reading(value=2, price=None, done=None, note='{"a": 5}', loose=b"\x00", doc="x")
    querier.add_reading(value=4, price=None, done=None, note=None, loose=1.5, doc=3)
    assert querier.total() == readings.TotalRow(total=6)
    assert querier.paths() == [5, None]
    assert querier.loose() == [
        readings.LooseRow(loose=b"\x00", doc="x"),
        readings.LooseRow(loose=1.5, doc=3),
    ]
    assert querier.notes() == ['{"a": 5}', ""]


@pytest.mark.slow
def test_untyped_refuse_fails_instead_of_typing_object(tmp_path: pathlib.Path) -> None:
    case = write_case(
        tmp_path / "case",
        "sqlite",
        "CREATE TABLE t (id INTEGER NOT NULL);\n",
        "-- name: Total :one\nSELECT coalesce(sum(id), 0) AS total FROM t;\n",
        {"untyped": "refuse"},
    )
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert "query Total" in done.stderr + done.stdout
    assert not (case / "out").exists()


@pytest.mark.slow
def test_the_plugin_warns_on_stderr_for_each_object(tmp_path: pathlib.Path) -> None:
    # sqlc shows a plugin's stderr only when it fails: a wrapper keeps it.
    wrapper = tmp_path / "bin" / "sqlc-gen-jobtable"
    wrapper.parent.mkdir()
    err = tmp_path / "stderr.txt"
    wrapper.write_text(f'#!/bin/sh\nexec "{PLUGIN_DIR / "sqlc-gen-jobtable"}" 2>"{err}"\n')
    wrapper.chmod(0o755)
    case = tmp_path / "case"
    shutil.copytree(CASES / "sqlite_untyped", case)
    env = sqlc_env()
    env["PATH"] = f"{wrapper.parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        [tool("sqlc"), "generate"], cwd=case, env=env, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = err.read_text().splitlines()
    assert any(
        "query Total (readings.sql): column 'total' is typed object" in line
        and "CAST(coalesce(sum(value), 0) AS INTEGER)" in line
        for line in lines
    ), lines
    assert any("readings.loose is declared without a type" in line for line in lines)
    assert all(line.startswith("sqlc-gen-jobtable: warning: ") for line in lines)


@pytest.fixture
def pg_conn(pg_server: str) -> Iterator[psycopg.Connection[psycopg.rows.TupleRow]]:
    name = f"plugin_test_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
        try:
            with psycopg.connect(pg_server, autocommit=True, options=f"-csearch_path={name}") as c:
                c.execute((CASES / "postgres_untyped" / "schema.sql").read_text().encode())
                yield c
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.mark.postgres
def test_postgres_untyped_values_and_extremes(
    pg_conn: psycopg.Connection[psycopg.rows.TupleRow],
) -> None:
    q = pg_readings.Querier(pg_conn)
    assert q.extremes() == pg_readings.ExtremesRow(top=None, cheapest=None, latest=None)
    q.add_reading(value=3, price=decimal.Decimal("1.5"), at=AWARE, note="a", tags=["x"])
    q.add_reading(value=5, price=decimal.Decimal("0.5"), at=None, note=None, tags=None)
    assert q.extremes() == pg_readings.ExtremesRow(
        top=5, cheapest=decimal.Decimal("0.5"), latest=AWARE
    )
    assert q.total() == pg_readings.TotalRow(total=8)
    assert q.notes() == ["a", ""]
    assert q.joined() == ["a!", None]
    assert q.tags() == [["x"], None]
    assert q.sorted(p1="value") == [1, 2]
    assert q.sorted(p1="id") == [2, 1]
