"""What the plugin cannot generate exactly, it refuses with a message naming the cause.

Each test runs sqlc with the plugin on a small case written to a temporary
directory and expects a non-zero exit, no output, and a message naming the
query (or table), the column and the type, or the option.
"""

import pathlib
import subprocess

import pytest
from plugin_harness import run_sqlc, sqlc_env, tool, write_case

pytestmark = pytest.mark.slow  # every test here runs sqlc

SQLITE_TABLE = "CREATE TABLE t (id INTEGER NOT NULL, name TEXT NOT NULL);\n"
POSTGRES_TABLE = "CREATE TABLE t (id int8 NOT NULL, name text NOT NULL);\n"
SQLITE_QUERY = "-- name: GetName :one\nSELECT name FROM t WHERE id = @id;\n"
POSTGRES_QUERY = "-- name: GetName :one\nSELECT name FROM t WHERE id = $1;\n"


def _refused(
    tmp_path: pathlib.Path,
    engine: str,
    schema: str,
    queries: str,
    options: dict[str, str] | None = None,
) -> str:
    """Runs sqlc generate on the case; asserts it failed and wrote nothing; returns its output."""
    case = write_case(tmp_path / "case", engine, schema, queries, options or {})
    done = run_sqlc(case, "generate")
    assert done.returncode != 0, f"sqlc generate succeeded:\n{done.stdout}{done.stderr}"
    assert not (case / "out").exists()
    return done.stdout + done.stderr


def test_unknown_type_of_a_table_column_names_table_column_and_type(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        "CREATE TABLE hosts (id int8 NOT NULL, address inet);\n",
        "-- name: CountHosts :one\nSELECT count(*) FROM hosts;\n",
    )
    assert "table hosts" in message
    assert "'address'" in message
    assert "'inet'" in message


def test_unknown_type_of_a_result_column_names_query_column_and_type(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        POSTGRES_TABLE,
        "-- name: GetAddress :one\nSELECT '127.0.0.1'::inet AS address FROM t;\n",
    )
    assert "query GetAddress" in message
    assert "'address'" in message
    assert "'inet'" in message


def test_unknown_type_of_a_parameter_names_query_parameter_and_type(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        POSTGRES_TABLE,
        "-- name: CountNear :one\nSELECT count(*) FROM t WHERE @near::inet IS NOT NULL;\n",
    )
    assert "query CountNear" in message
    assert "parameter" in message
    assert "'near'" in message
    assert "'inet'" in message


def test_a_sqlite_type_without_an_exact_python_type_is_refused(tmp_path: pathlib.Path) -> None:
    # NUMERIC affinity returns an int or a float depending on the value.
    message = _refused(
        tmp_path,
        "sqlite",
        "CREATE TABLE prices (id INTEGER NOT NULL, amount NUMERIC(10, 2) NOT NULL);\n",
        "-- name: GetAmount :one\nSELECT amount FROM prices WHERE id = @id;\n",
    )
    assert "table prices" in message
    assert "'amount'" in message
    assert "NUMERIC" in message


def test_copyfrom_command_is_refused_naming_the_query(tmp_path: pathlib.Path) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        POSTGRES_TABLE,
        "-- name: CopyRows :copyfrom\nINSERT INTO t (id, name) VALUES ($1, $2);\n",
    )
    assert "query CopyRows" in message
    assert ":copyfrom" in message


def test_batchmany_command_is_refused_naming_the_query(tmp_path: pathlib.Path) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        POSTGRES_TABLE,
        "-- name: GetMany :batchmany\nSELECT id FROM t WHERE id = $1;\n",
    )
    assert "query GetMany" in message
    assert ":batchmany" in message


def test_batchexec_that_returns_rows_is_refused_naming_the_query(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        POSTGRES_TABLE,
        "-- name: DeleteSome :batchexec\nDELETE FROM t WHERE id = $1 RETURNING id;\n",
    )
    assert "query DeleteSome" in message
    assert ":batchexec" in message


def test_execlastid_on_postgresql_is_refused_pointing_at_returning(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        POSTGRES_TABLE,
        "-- name: InsertRow :execlastid\nINSERT INTO t (id, name) VALUES ($1, $2);\n",
    )
    assert "query InsertRow" in message
    assert ":execlastid" in message
    assert "RETURNING" in message


def test_sqlite_query_mixing_named_and_bare_placeholders_is_refused(
    tmp_path: pathlib.Path,
) -> None:
    # sqlc sends WHERE id > ? LIMIT ? with limit as parameter 1 and after as 2:
    # bound in that order, the query would run with the values swapped.
    message = _refused(
        tmp_path,
        "sqlite",
        SQLITE_TABLE,
        "-- name: ListNames :many\nSELECT name FROM t WHERE id > @after LIMIT ?;\n",
    )
    assert "query ListNames" in message
    assert "bare ?" in message


def test_sqlc_slice_is_refused_naming_the_parameter(tmp_path: pathlib.Path) -> None:
    message = _refused(
        tmp_path,
        "sqlite",
        SQLITE_TABLE,
        "-- name: GetMany :many\nSELECT name FROM t WHERE id IN (sqlc.slice(ids));\n",
    )
    assert "query GetMany" in message
    assert "'ids'" in message
    assert "sqlc.slice" in message


def test_bad_models_option_value_is_refused_naming_option_and_value(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(tmp_path, "sqlite", SQLITE_TABLE, SQLITE_QUERY, {"models": "attrs"})
    assert "option models" in message
    assert "'attrs'" in message


def test_bad_boolean_option_value_is_refused(tmp_path: pathlib.Path) -> None:
    message = _refused(tmp_path, "sqlite", SQLITE_TABLE, SQLITE_QUERY, {"emit_schema": "yes"})
    assert "option emit_schema" in message
    assert "'yes'" in message


def test_driver_of_another_engine_is_refused(tmp_path: pathlib.Path) -> None:
    message = _refused(tmp_path, "sqlite", SQLITE_TABLE, SQLITE_QUERY, {"driver": "psycopg"})
    assert "option driver" in message
    assert "'psycopg'" in message


def test_emit_async_with_sqlite3_is_refused(tmp_path: pathlib.Path) -> None:
    message = _refused(tmp_path, "sqlite", SQLITE_TABLE, SQLITE_QUERY, {"emit_async": "true"})
    assert "option emit_async" in message
    assert "psycopg" in message


def test_unknown_option_is_refused_naming_it(tmp_path: pathlib.Path) -> None:
    message = _refused(tmp_path, "sqlite", SQLITE_TABLE, SQLITE_QUERY, {"emit_pydantic": "true"})
    assert "unknown options: emit_pydantic" in message


def test_unsupported_engine_is_refused_naming_it(tmp_path: pathlib.Path) -> None:
    message = _refused(
        tmp_path,
        "mysql",
        "CREATE TABLE t (id bigint NOT NULL);\n",
        "-- name: GetID :one\nSELECT id FROM t;\n",
    )
    assert "'mysql'" in message


def test_emit_schema_from_another_directory_says_where_to_run_sqlc(
    tmp_path: pathlib.Path,
) -> None:
    # sqlc sends schema paths relative to sqlc.yaml and runs the plugin in its
    # own working directory, so the plugin cannot find the schema from elsewhere.
    case = write_case(
        tmp_path / "case", "sqlite", SQLITE_TABLE, SQLITE_QUERY, {"emit_schema": "true"}
    )
    done = subprocess.run(
        [tool("sqlc"), "generate", "-f", str(case / "sqlc.yaml")],
        cwd=tmp_path,
        env=sqlc_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "option emit_schema: cannot read schema.sql" in done.stderr
    assert "run sqlc from the directory of sqlc.yaml" in done.stderr
