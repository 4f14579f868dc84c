"""Output made lint-clean still runs the SQL as written.

The golden package sqlite_lint strips trailing whitespace from SQL code and
escapes it inside string literals; its names l, O and I get an underscore.
"""

import pathlib
import sqlite3
from collections.abc import Iterator

import pytest
from plugin_harness import GOLDEN
from sqlite_lint import models, q, schema

assert pathlib.Path(q.__file__).parent == GOLDEN / "sqlite_lint"

LITERAL = "two trailing spaces:  \nand a tab:\t\nend"


@pytest.fixture
def querier(tmp_path: pathlib.Path) -> Iterator[q.Querier]:
    conn = sqlite3.connect(tmp_path / "test.db", isolation_level=None)
    conn.executescript(schema.SCHEMA)
    yield q.Querier(conn)
    conn.close()


def test_trailing_whitespace_inside_a_literal_is_kept_escaped() -> None:
    assert f"'{LITERAL}'" in q.ADD_I
    assert f"'{LITERAL}'" in q.FIND_NOTE


def test_trailing_whitespace_of_code_is_stripped() -> None:
    assert all(line == line.rstrip() for line in q.L.splitlines())


def test_a_row_inserted_with_the_literal_is_found_by_it(querier: q.Querier) -> None:
    querier.add_i(l_=1, o="x")
    assert querier.find_note(o="x") is not None
    assert querier.l_(l_=0) == [models.I_(id=1, l_=1, o="x", note=LITERAL)]
