"""The plugin's MySQL SQL: ? rewritten for PyMySQL, the server check, and the refusals.

sqlc hands MySQL queries with ``?``; PyMySQL formats them with ``%``. Only a
``?`` in code is a placeholder: strings, quoted identifiers and comments keep
theirs, and a query given parameters has its literal percent signs doubled.
"""

import pathlib
import urllib.parse

import pymysql
import pytest
from plugin_harness import query_plan, run_sqlc, write_case
from sqlc_gen_jobtable._catalog import Field
from sqlc_gen_jobtable._mysql_check import check_mysql, server_sql
from sqlc_gen_jobtable._mysql_sql import mysql_sql
from sqlc_gen_jobtable._mysql_types import set_types
from sqlc_gen_jobtable._plan import QueryPlan
from sqlc_gen_jobtable._pytype import PyType
from sqlc_gen_jobtable._request import Enum, RequestError


@pytest.mark.parametrize(
    ("text", "sql", "count"),
    [
        ("SELECT 1", "SELECT 1", 0),
        ("SELECT '%' AS p", "SELECT '%' AS p", 0),
        ("SELECT ? AS a, ? AS b", "SELECT %s AS a, %s AS b", 2),
        ("SELECT '?', ?", "SELECT '?', %s", 1),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s", 1),
        ("SELECT 'a\\'?', ?", "SELECT 'a\\'?', %s", 1),
        ('SELECT "?", `a?`, `b``?`, ?', 'SELECT "?", `a?`, `b``?`, %s', 1),
        ("SELECT ? -- a ?\n, ?", "SELECT %s -- a ?\n, %s", 2),
        ("SELECT ? # a ?\n, ?", "SELECT %s # a ?\n, %s", 2),
        ("SELECT ? /* a ? */, ?", "SELECT %s /* a ? */, %s", 2),
        # -- is a comment only before a space: 1--? is 1 minus minus ?.
        ("SELECT 1--?", "SELECT 1--%s", 1),
        ("SELECT 5 % ?, '%'", "SELECT 5 %% %s, '%%'", 1),
        ("SELECT 1 WHERE a IN (/*SLICE:ids*/?)", "SELECT 1 WHERE a IN (/*SLICE:ids*/%s)", 1),
    ],
)
def test_placeholders_become_percent_s_in_code_only(text: str, sql: str, count: int) -> None:
    assert mysql_sql(text, "q") == (sql, count)


@pytest.mark.parametrize("text", ["SELECT 'a", 'SELECT "a', "SELECT `a", "SELECT /* a"])
def test_an_unterminated_quote_or_comment_is_refused(text: str) -> None:
    with pytest.raises(RequestError, match="q: unterminated quote or comment"):
        mysql_sql(text, "q")


def _plan(sql: str, command: str, binds: int, columns: int = 0) -> QueryPlan:
    fields = tuple(Field(f"p{i}", PyType("int")) for i in range(binds))
    return query_plan(sql, command, fields, columns, driver="pymysql")


SCHEMA = "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL);"


def test_server_sql_is_what_the_server_prepares() -> None:
    plan = _plan("SELECT '%%' FROM t WHERE a IN (/*SLICE:a*/%s) AND b = %s", ":many", 2)
    assert server_sql(plan) == "SELECT '%' FROM t WHERE a IN (?) AND b = ?"
    assert server_sql(_plan("SELECT '%'", ":one", 0)) == "SELECT '%'"


@pytest.mark.slow
def test_the_server_check_passes_constants_that_match_their_methods(mysql_url: str) -> None:
    plans = [
        _plan("SELECT id, name FROM items WHERE id = %s", ":one", 1, 2),
        _plan("UPDATE items SET name = %s WHERE id = %s", ":execrows", 2),
        _plan("SELECT '100%' AS p", ":one", 0, 1),
        _plan("INSERT INTO items (id, name) VALUES (%s, %s)", ":exec", 2),
    ]
    assert check_mysql(mysql_url, SCHEMA, plans) == []


@pytest.mark.slow
def test_the_server_check_names_each_constant_that_differs(mysql_url: str) -> None:
    plans = [
        _plan("SELECT id, name FROM items WHERE id =", ":one", 1, 2),
        _plan("UPDATE items SET name = %s WHERE id = %s", ":exec", 1),
        _plan("SELECT id FROM items WHERE id = %s", ":many", 1, 2),
        _plan("SELECT nope FROM items", ":many", 0, 1),
    ]
    errors = check_mysql(mysql_url, SCHEMA, plans)
    assert len(errors) == 4, errors
    assert "its SQL constant does not prepare" in errors[0]
    assert "takes 2 parameters, the method binds 1" in errors[1]
    assert "returns 1 columns, the method reads 2" in errors[2]
    assert "does not prepare" in errors[3]
    assert "nope" in errors[3]


@pytest.mark.slow
def test_the_server_check_takes_a_schema_of_comments_only(mysql_url: str) -> None:
    # The server calls a text with no statement an error (1065, "Query was
    # empty"); a schema with none is no error.
    plans = [_plan("SELECT 1 AS one", ":one", 0, 1)]
    assert check_mysql(mysql_url, "-- no tables here\n", plans) == []
    assert check_mysql(mysql_url, "", plans) == []


@pytest.mark.slow
def test_the_server_check_drops_the_databases_its_schema_creates(mysql_url: str) -> None:
    # Left behind, a database the schema creates fails the next check with
    # "database exists".
    schema = "CREATE SCHEMA scoped_check;\nCREATE TABLE scoped_check.bar (id INT NOT NULL);\n"
    plans = [_plan("SELECT id FROM scoped_check.bar", ":many", 0, 1)]
    assert check_mysql(mysql_url, schema, plans) == []
    assert check_mysql(mysql_url, schema, plans) == []
    parts = urllib.parse.urlsplit(mysql_url)
    conn = pymysql.connect(host=parts.hostname, port=parts.port or 3306, user="root")
    with conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES LIKE 'scoped_check'")
        assert cur.fetchall() == ()


MYSQL_SCHEMA = "CREATE TABLE items (id INT NOT NULL PRIMARY KEY, name VARCHAR(10) NOT NULL);\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("queries", "message"),
    [
        (
            "-- name: Many :batchmany\nSELECT id FROM items WHERE id = ?;\n",
            ":batchmany is not supported on MySQL: PyMySQL has no pipeline",
        ),
        (
            "-- name: One :batchone\nSELECT id FROM items WHERE id = ?;\n",
            ":batchone is not supported on MySQL: PyMySQL has no pipeline",
        ),
        (
            "-- name: B :batchexec\nDELETE FROM items WHERE id IN (sqlc.slice(ids));\n",
            "sqlc.slice cannot be used in a :batchexec query on MySQL",
        ),
    ],
)
def test_what_pymysql_cannot_run_is_refused_saying_why(
    tmp_path: pathlib.Path, queries: str, message: str
) -> None:
    case = write_case(tmp_path, "mysql", MYSQL_SCHEMA, queries, {})
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert message in done.stderr
    assert not (case / "out").exists()


@pytest.mark.slow
def test_mysql_takes_only_the_pymysql_driver(tmp_path: pathlib.Path) -> None:
    case = write_case(
        tmp_path,
        "mysql",
        MYSQL_SCHEMA,
        "-- name: A :exec\nDELETE FROM items;\n",
        {"driver": "psycopg"},
    )
    done = run_sqlc(case, "generate")
    assert "option driver: 'psycopg' does not fit engine mysql: want pymysql" in done.stderr


def _enum(name: str) -> Enum:
    return Enum(name=name, schema="", values=("a", "b"), comment="")


def test_set_columns_are_told_from_enum_ones_by_their_tables_declaration() -> None:
    schema_text = """
        CREATE TABLE `a` (kind ENUM('a', 'b'), `tags` SET ('a', 'b'));
        CREATE TABLE IF NOT EXISTS b (kind SET('a', 'b'), other ENUM('a', 'b'));
        ALTER TABLE a ADD COLUMN extra set('a', 'b');
    """
    enums = tuple(_enum(n) for n in ["a_kind", "a_tags", "b_kind", "b_other", "a_extra"])
    assert set_types(schema_text, enums, ("a", "b")) == {"a_tags", "b_kind", "a_extra"}


@pytest.mark.slow
def test_a_type_with_no_python_type_is_object_with_a_comment_or_refused(
    tmp_path: pathlib.Path,
) -> None:
    schema_text = "CREATE TABLE shapes (id INT NOT NULL PRIMARY KEY, place VECTOR(3) NOT NULL);\n"
    queries = (
        "-- name: Shapes :many\nSELECT * FROM shapes;\n\n"
        "-- name: Total :one\nSELECT coalesce(sum(id), 0) AS total FROM shapes;\n"
    )
    case = write_case(tmp_path / "object", "mysql", schema_text, queries, {})
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stderr
    models_text = (case / "out" / "models.py").read_text()
    assert (
        "    # shapes.place is declared vector, which has no one Python type on MySQL: "
        "map it with a column override\n    place: object\n"
    ) in models_text
    q_text = (case / "out" / "q.py").read_text()
    assert "CAST it, as in CAST(coalesce(sum(id), 0) AS SIGNED)" in q_text
    refused = write_case(tmp_path / "refuse", "mysql", schema_text, queries, {"untyped": "refuse"})
    done = run_sqlc(refused, "generate")
    assert "type 'vector' has no exact Python type on MySQL: map it with an override" in done.stderr
