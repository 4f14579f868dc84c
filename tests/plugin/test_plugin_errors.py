"""What the plugin cannot generate exactly, it refuses with a message naming the cause.

Each test runs sqlc with the plugin on a small case written to a temporary
directory and expects a non-zero exit, no output, and a message naming the
query (or table), the column and the type, or the option.
"""

import pathlib
import subprocess

import pytest
from plugin_harness import run_sqlc, sqlc_env, tool, write_case
from sqlc_gen_jobtable._options import Options
from sqlc_gen_jobtable._request import Request, RequestError

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
        "CREATE DOMAIN pair AS int4 CHECK (VALUE > 0);\n"
        "CREATE TABLE docs (id int8 NOT NULL, words pair);\n",
        "-- name: CountDocs :one\nSELECT count(*) FROM docs;\n",
    )
    assert "table docs" in message
    assert "'words'" in message
    assert "'pair'" in message
    assert "override" in message


def test_unknown_type_of_a_result_column_names_query_column_and_type(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        "CREATE DOMAIN pair AS int4 CHECK (VALUE > 0);\n" + POSTGRES_TABLE,
        "-- name: GetWords :one\nSELECT '(1,2)'::pair AS words FROM t;\n",
    )
    assert "query GetWords" in message
    assert "'words'" in message
    assert "'pair'" in message


def test_unknown_type_of_a_parameter_names_query_parameter_and_type(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        "CREATE DOMAIN pair AS int4 CHECK (VALUE > 0);\n" + POSTGRES_TABLE,
        "-- name: CountNear :one\nSELECT count(*) FROM t WHERE @near::pair IS NOT NULL;\n",
    )
    assert "query CountNear" in message
    assert "parameter" in message
    assert "'near'" in message
    assert "'pair'" in message


# The untyped option's refusal: a value sqlc infers no type for is an error.
REFUSE = {"untyped": "refuse"}


def test_a_sqlite_type_without_an_exact_python_type_is_refused(tmp_path: pathlib.Path) -> None:
    # A spelling SQLite accepts (any name is a type there) but no one maps.
    message = _refused(
        tmp_path,
        "sqlite",
        "CREATE TABLE places (id INTEGER NOT NULL, shape GEOMETRY NOT NULL);\n",
        "-- name: GetShape :one\nSELECT shape FROM places WHERE id = @id;\n",
        REFUSE,
    )
    assert "table places" in message
    assert "'shape'" in message
    assert "GEOMETRY" in message


def test_batchmany_on_sqlite_is_refused_naming_the_query(tmp_path: pathlib.Path) -> None:
    message = _refused(
        tmp_path,
        "sqlite",
        SQLITE_TABLE,
        "-- name: GetMany :batchmany\nSELECT id FROM t WHERE id = ?;\n",
    )
    assert "query GetMany" in message
    assert ":batchmany needs PostgreSQL" in message


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
    assert "PostgreSQL has no last insert id" in message
    assert "RETURNING id" in message
    assert "use :one" in message


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


def test_sqlite_expression_without_a_type_names_query_and_column_and_suggests_cast(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "sqlite",
        SQLITE_TABLE,
        "-- name: Highest :one\nSELECT json_extract(name, '$.a') AS top FROM t;\n",
        REFUSE,
    )
    assert "query Highest" in message
    assert "'top'" in message
    assert "sqlc infers no type" in message
    assert "CAST(max(x) AS INTEGER)" in message
    assert "override (db_type: any" in message


def test_every_refused_query_is_named_in_one_run(tmp_path: pathlib.Path) -> None:
    # A refusal still fails the whole generate (partial output would be
    # wrong output), but names every refused query, not just the first.
    message = _refused(
        tmp_path,
        "sqlite",
        SQLITE_TABLE,
        "-- name: First :one\nSELECT max(id + 1) AS a FROM t;\n"
        "-- name: Fine :one\nSELECT name FROM t WHERE id = ?;\n"
        "-- name: Second :one\nSELECT ifnull(name, 1) AS b FROM t;\n",
        REFUSE,
    )
    assert "query First" in message
    assert "query Second" in message
    assert "query Fine" not in message


def test_two_tables_making_one_class_name_are_refused_pointing_at_rename(
    tmp_path: pathlib.Path,
) -> None:
    message = _refused(
        tmp_path,
        "postgresql",
        "CREATE TABLE user_role (id int8 NOT NULL);\nCREATE TABLE user_roles (id int8 NOT NULL);\n",
        "-- name: CountRoles :one\nSELECT count(*) FROM user_roles;\n",
    )
    assert "table user_role" in message
    assert "table user_roles" in message
    assert "class UserRole" in message
    assert "rename" in message


def test_a_bad_override_is_refused_naming_its_entry(tmp_path: pathlib.Path) -> None:
    case = write_case(tmp_path / "case", "sqlite", SQLITE_TABLE, SQLITE_QUERY, {})
    yaml = (case / "sqlc.yaml").read_text()
    (case / "sqlc.yaml").write_text(
        yaml + "        options:\n          overrides:\n            - db_type: text\n"
    )
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert "option overrides[0]: py_type ''" in done.stderr


def test_a_rename_to_a_keyword_is_refused(tmp_path: pathlib.Path) -> None:
    case = write_case(tmp_path / "case", "sqlite", SQLITE_TABLE, SQLITE_QUERY, {})
    yaml = (case / "sqlc.yaml").read_text()
    (case / "sqlc.yaml").write_text(
        yaml + "        options:\n          rename:\n            t: class\n"
    )
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert "option rename: t: 'class' is not a Python name" in done.stderr


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


def test_unsupported_engine_is_refused_naming_it() -> None:
    # sqlc itself knows only the three engines the plugin takes; a request
    # of another (a later sqlc's) is refused by name.
    request = Request("clickhouse", (), "v1.31.1", {}, (), ())
    with pytest.raises(RequestError, match="engine 'clickhouse' is not supported"):
        Options.parse(request)


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


def test_a_plugin_entry_without_format_json_is_refused_saying_so(tmp_path: pathlib.Path) -> None:
    case = write_case(tmp_path / "case", "sqlite", SQLITE_TABLE, SQLITE_QUERY, {})
    yaml = (case / "sqlc.yaml").read_text()
    (case / "sqlc.yaml").write_text(yaml.replace("      format: json\n", ""))
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert "set format: json" in done.stderr


def test_a_sqlite_column_without_a_type_is_refused_saying_so(tmp_path: pathlib.Path) -> None:
    message = _refused(
        tmp_path,
        "sqlite",
        "CREATE TABLE t (id INTEGER NOT NULL, name TEXT NOT NULL, anything);\n",
        SQLITE_QUERY,
        REFUSE,
    )
    assert "table t: column 'anything' is declared without a type" in message


def test_two_query_files_making_one_module_are_refused(tmp_path: pathlib.Path) -> None:
    case = write_case(tmp_path / "case", "sqlite", SQLITE_TABLE, SQLITE_QUERY, {})
    (case / "queries" / "q-.sql").write_text("-- name: Other :one\nSELECT id FROM t;\n")
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert "also makes the module q.py" in done.stderr


def test_a_query_file_named_schema_is_refused_only_beside_emit_schema(
    tmp_path: pathlib.Path,
) -> None:
    for emit_schema, refused in (("false", False), ("true", True)):
        case = write_case(
            tmp_path / emit_schema, "sqlite", SQLITE_TABLE, "", {"emit_schema": emit_schema}
        )
        (case / "queries" / "q.sql").unlink()
        (case / "queries" / "schema.sql").write_text(SQLITE_QUERY)
        done = run_sqlc(case, "generate")
        assert (done.returncode != 0) == refused, done.stderr
        if refused:
            assert "query file schema.sql: its module would replace schema.py" in done.stderr
        else:
            assert (case / "out" / "schema.py").read_text().count("def get_name(") == 1
