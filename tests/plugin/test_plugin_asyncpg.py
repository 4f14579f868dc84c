"""The asyncpg driver: what it refuses, and the names its COPY writes to.

The refusals run sqlc with the plugin on a small case and expect a non-zero
exit, no output and a message naming the query or column and the cause.
The COPY test generates a case whose table is in a schema of its own and
spelled in mixed case, then runs the generated method on the server.
"""

import importlib
import pathlib
import secrets
import sys

import asyncpg
import pytest
from plugin_harness import run_sqlc, write_case

TABLE = "CREATE TABLE t (id int8 NOT NULL, name text NOT NULL);\n"
ASYNCPG = {"driver": "asyncpg"}


def _refused(tmp_path: pathlib.Path, schema: str, queries: str, options: dict[str, str]) -> str:
    """Runs sqlc generate on the case; asserts it failed and wrote nothing; returns its output."""
    case = write_case(tmp_path / "case", "postgresql", schema, queries, options)
    done = run_sqlc(case, "generate")
    assert done.returncode != 0, f"sqlc generate succeeded:\n{done.stdout}{done.stderr}"
    assert not (case / "out").exists()
    return done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "cause"),
    [
        (":batchone", "fetchmany"),
        (":batchmany", "fetchmany"),
        (":execlastid", "RETURNING"),
    ],
)
def test_a_command_asyncpg_cannot_run_is_refused_naming_the_query(
    tmp_path: pathlib.Path, command: str, cause: str
) -> None:
    queries = f"-- name: Rename {command}\nUPDATE t SET name = $1 WHERE id = $2 RETURNING id;\n"
    if command == ":execlastid":
        queries = f"-- name: Rename {command}\nINSERT INTO t (id, name) VALUES ($1, $2);\n"
    message = _refused(tmp_path, TABLE, queries, ASYNCPG)
    assert f"query Rename (q.sql): {command} is not supported with driver asyncpg" in message
    assert cause in message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ("CREATE TABLE r (id int8 NOT NULL, span int4range NOT NULL);\n", "'int4range'"),
        (
            "CREATE TYPE pair AS (a int4, b text);\n"
            "CREATE TABLE r (id int8 NOT NULL, span pair NOT NULL);\n",
            "composite type 'pair'",
        ),
        ("CREATE TABLE r (id int8 NOT NULL, span point NOT NULL);\n", "'point'"),
    ],
)
def test_a_type_asyncpg_returns_as_its_own_class_is_refused(
    tmp_path: pathlib.Path, schema: str, named: str
) -> None:
    message = _refused(tmp_path, schema, "-- name: GetR :many\nSELECT * FROM r;\n", ASYNCPG)
    assert "table r: column 'span'" in message
    assert named in message
    assert "asyncpg" in message
    assert "override" in message


@pytest.mark.slow
def test_emit_async_with_asyncpg_is_refused(tmp_path: pathlib.Path) -> None:
    queries = "-- name: GetName :one\nSELECT name FROM t WHERE id = $1;\n"
    message = _refused(tmp_path, TABLE, queries, {**ASYNCPG, "emit_async": "true"})
    assert "option emit_async: asyncpg's Querier is async already" in message


@pytest.mark.slow
def test_a_driver_of_no_engine_names_the_drivers_that_fit(tmp_path: pathlib.Path) -> None:
    queries = "-- name: GetName :one\nSELECT name FROM t WHERE id = $1;\n"
    message = _refused(tmp_path, TABLE, queries, {"driver": "asyncpg2"})
    assert "want psycopg or asyncpg" in message


@pytest.mark.slow
@pytest.mark.postgres
async def test_copyfrom_names_the_schema_table_and_columns_as_postgres_reads_them(
    pg_server: str, tmp_path: pathlib.Path
) -> None:
    # A schema of a random name, holding a table whose name and a column are
    # quoted, written to by a COPY whose other column is in upper case.
    name = f"plugin_copy_{secrets.token_hex(6)}"
    schema = f'CREATE SCHEMA {name};\nCREATE TABLE {name}."Ledger" (id int8, "Amount" numeric);\n'
    queries = (
        "-- name: CopyLedger :copyfrom\n"
        f'INSERT INTO {name}."Ledger" ("Amount", ID) VALUES ($2, $1);\n'
    )
    case = write_case(tmp_path / "case", "postgresql", schema, queries, ASYNCPG)
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stderr
    (case / "out").rename(case / name)
    code = (case / name / "q.py").read_text()
    assert '"Ledger",' in code
    assert f'schema_name="{name}",' in code
    sys.path.insert(0, str(case))
    try:
        q = importlib.import_module(f"{name}.q")
    finally:
        sys.path.remove(str(case))
    conn = await asyncpg.connect(pg_server)
    try:
        await conn.execute(schema)
        querier = q.Querier(conn)
        assert await querier.copy_ledger([q.CopyLedgerParams(id=7, amount=None)]) == 1
        rows = await conn.fetch(f'SELECT id, "Amount" FROM {name}."Ledger"')
        assert [tuple(r) for r in rows] == [(7, None)]
    finally:
        await conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        await conn.close()


@pytest.mark.slow
def test_an_override_maps_a_type_asyncpg_has_no_exact_type_for(tmp_path: pathlib.Path) -> None:
    schema = "CREATE TABLE r (id int8 NOT NULL, span int4range NOT NULL);\n"
    options = {**ASYNCPG, "overrides": "[{db_type: int4range, py_type: asyncpg.Range}]"}
    case = write_case(
        tmp_path / "case", "postgresql", schema, "-- name: GetR :many\nSELECT * FROM r;\n", options
    )
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stderr
    assert "    span: asyncpg.Range\n" in (case / "out" / "models.py").read_text()
