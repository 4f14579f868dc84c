"""How the engine's SQLite connections bind sqlc's numbered ``?N`` placeholders, on real files.

Each numbered text is rewritten once to plain ``?`` and bound by position;
text it cannot rewrite is bound by name. Either way the values land where
the numbers say, with no DeprecationWarning on any Python version.
"""

import sqlite3
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobtable._engines.sqlite.file import connect
from jobtable._engines.sqlite.text import Connection


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Connection]:
    opened = connect(tmp_path / "bind.db", create=True, busy_timeout=1.0)
    opened.execute("CREATE TABLE t (a, b, c)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield opened
    opened.close()


def test_a_number_used_twice_and_out_of_order_binds_its_own_value(conn: Connection) -> None:
    assert conn.execute("SELECT ?2, ?1, ?2, ?3", ("one", "two", "three")).fetchall() == [
        ("two", "one", "two", "three")
    ]


def test_placeholders_in_quotes_and_comments_are_left_as_text(conn: Connection) -> None:
    sql = "SELECT '?1', ?1 AS \"x?2\", [y?3] -- ?4 is a comment\nFROM (SELECT 1 AS [y?3]) /* ?5 */"
    assert conn.execute(sql, ["v"]).fetchall() == [("?1", "v", 1)]
    assert conn.execute("SELECT ?1 || ':x' || 'it''s ?2'", ("a",)).fetchall() == [("a:xit's ?2",)]


def test_text_the_rewrite_leaves_alone_is_bound_as_before(conn: Connection) -> None:
    assert conn.execute("SELECT :name", {"name": 3}).fetchall() == [(3,)]
    assert conn.execute("SELECT 1").fetchall() == [(1,)]
    # A $ outside quotes might start a named placeholder: bound by name.
    assert conn.execute("SELECT ?1 AS a$b", ("a",)).fetchall() == [("a",)]


def test_too_few_values_is_a_driver_error_naming_the_missing_one(conn: Connection) -> None:
    with pytest.raises(sqlite3.ProgrammingError, match="2"):
        conn.execute("SELECT ?1, ?2", ("only",))


def test_executemany_binds_every_row_by_its_numbers(conn: Connection) -> None:
    conn.executemany("INSERT INTO t (a, b, c) VALUES (?2, ?1, ?2)", [(1, 2), (3, 4)])
    conn.executemany("INSERT INTO t (a, b, c) VALUES (?1, ?1, ?1)", [])
    assert conn.execute("SELECT a, b, c FROM t ORDER BY a").fetchall() == [(2, 1, 2), (4, 3, 4)]
