"""The server's result types win over sqlc's inference, or the generation fails saying why.

On MariaDB (the session's throwaway server, tests/conftest.py's
``mysql_url``) the check reads each result column's type from the rows the
server sends; on PostgreSQL from the prepared statement's description. A
server type with no Python type, where sqlc's has one, fails the
generation naming the query, the column, both types and the override.
"""

import decimal
import importlib.util
import pathlib
import types

import pytest
from mysql_values import connect
from plugin_harness import run_sqlc, write_case
from runtime_types import check_row

pytestmark = pytest.mark.slow

MYSQL_SCHEMA = """CREATE TABLE items (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  price DECIMAL(10, 2) NOT NULL,
  qty INT NOT NULL,
  ratio DOUBLE NOT NULL,
  flag BOOLEAN NOT NULL
);
"""
# sqlc types price * qty, ROUND(price) and ABS(price) as int or float, and
# qty * ratio and CEIL(ratio) as int: MariaDB returns DECIMAL, DOUBLE.
MYSQL_QUERIES = """-- name: Amounts :one
SELECT price * qty AS total, qty * ratio AS scaled, ROUND(price) AS rounded,
  CEIL(ratio) AS up, ABS(price) AS absolute, qty = 1 AS single, flag
FROM items WHERE id = ?;
"""


def _generate_mysql(
    tmp_path: pathlib.Path, mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> types.ModuleType:
    """Generates the MySQL case checked on mysql_url; returns its query module, imported."""
    monkeypatch.setenv("SQLC_GEN_JOBTABLE_MYSQL_URL", mysql_url)
    case = write_case(
        tmp_path / "case", "mysql", MYSQL_SCHEMA, MYSQL_QUERIES, {"driver": "pymysql"}
    )
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stderr
    spec = importlib.util.spec_from_file_location("server_types_q", case / "out" / "q.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mysql_results_take_the_servers_types(
    tmp_path: pathlib.Path, mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = _generate_mysql(tmp_path, mysql_url, monkeypatch)
    assert q.AmountsRow.__annotations__ == {
        "total": decimal.Decimal,
        "scaled": float,
        "rounded": decimal.Decimal,
        "up": float,
        "absolute": decimal.Decimal,
        # MySQL's booleans are integers: sqlc's bool stands.
        "single": bool,
        "flag": bool,
    }


def test_mysql_values_match_the_servers_types(
    tmp_path: pathlib.Path, mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = _generate_mysql(tmp_path, mysql_url, monkeypatch)
    name = f"server_types_{tmp_path.name[-8:].replace('-', '_')}"
    with connect(mysql_url) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        try:
            with connect(mysql_url, name) as conn:
                with conn.cursor() as setup:
                    setup.execute(MYSQL_SCHEMA)
                    setup.execute(
                        "INSERT INTO items (price, qty, ratio, flag) VALUES (2.50, 3, 1.5, TRUE)"
                    )
                row = q.Querier(conn).amounts(id=1)
        finally:
            cur.execute(f"DROP DATABASE {name}")
    assert row is not None
    check_row(row)
    assert (row.total, row.scaled, row.up) == (decimal.Decimal("7.50"), 4.5, 2.0)
    assert (row.single, row.flag) == (False, True)


PG_SCHEMA = "CREATE TYPE span AS RANGE (subtype = float8);\nCREATE TABLE t (id int PRIMARY KEY);\n"
# sqlc types NULLIF(a, b) as a bool; the server says span, a range type
# the plugin has no Python type for.
PG_QUERIES = "-- name: Spanned :one\nSELECT NULLIF(span(1, 2), NULL) AS spanned FROM t;\n"


@pytest.mark.postgres
def test_a_server_type_without_a_python_type_is_refused_naming_the_fix(
    tmp_path: pathlib.Path,
) -> None:
    case = write_case(tmp_path / "case", "postgresql", PG_SCHEMA, PG_QUERIES, {})
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert (
        "query Spanned (q.sql): column 1: column 'spanned': sqlc types it bool (bool), "
        "the server span, which has no Python type here: CAST it in the SQL to the type "
        "meant, or map span with an override (db_type: span, py_type: ..., nullable: true)"
    ) in done.stderr
    assert not (case / "out").exists()


@pytest.mark.postgres
def test_the_override_the_refusal_names_settles_it(tmp_path: pathlib.Path) -> None:
    options = {"overrides": "[{db_type: span, py_type: str, nullable: true}]"}
    case = write_case(tmp_path / "case", "postgresql", PG_SCHEMA, PG_QUERIES, options)
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stderr
    assert "spanned: str | None" in (case / "out" / "q.py").read_text()
