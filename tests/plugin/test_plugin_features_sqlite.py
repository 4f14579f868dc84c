"""The sqlite_features golden package runs on a real SQLite database file.

Every row read back is checked field by field against the annotation the
generated code declares.
"""

import decimal
import pathlib
import sqlite3
from collections.abc import Iterator

import feature_types
import pytest
from plugin_harness import GOLDEN
from runtime_types import check_row
from sqlite_features import library, models, schema

assert (GOLDEN / "sqlite_features").is_dir()


@pytest.fixture
def q(tmp_path: pathlib.Path) -> Iterator[library.Querier]:
    conn = sqlite3.connect(tmp_path / "test.db", isolation_level=None)
    # The schema's first file ends without a semicolon: the joined schema
    # still runs as one script.
    conn.executescript(schema.SCHEMA)
    yield library.Querier(conn)
    conn.close()


def _author(q: library.Querier, name: str = "ann") -> int:
    result = q.add_author(name=name, rating=decimal.Decimal("4.5"), price=decimal.Decimal("9.99"))
    check_row(result)
    assert result.rowcount == 1
    assert result.lastrowid is not None
    return result.lastrowid


def _book(q: library.Querier, author: int, name: str) -> int:
    return q.add_book(
        author_id=author, name=name, code=f"isbn-{name}", sku=feature_types.Sku(f"sku-{name}")
    )


def test_numeric_columns_round_trip_as_decimal(q: library.Querier) -> None:
    author = _author(q)
    row = q.get_author(id=author)
    assert row == models.Authors(
        id=author, name="ann", rating=decimal.Decimal("4.5"), price=decimal.Decimal("9.99")
    )
    check_row(row)
    q.add_author(name="bob", rating=None, price=decimal.Decimal(3))
    bob = q.get_author(id=author + 1)
    assert bob is not None
    check_row(bob)
    assert (bob.rating, bob.price) == (None, decimal.Decimal(3))
    # max() is NULL over no rows, so its :one keeps a row: NULL is not "no row".
    top = q.top_rating()
    assert top is not None
    check_row(top)
    assert top.top == decimal.Decimal("4.5")


def test_sqlc_slice_expands_at_call_time(q: library.Querier) -> None:
    author = _author(q)
    ids = [_book(q, author, n) for n in "abcd"]
    rows = q.books_by_ids(ids=[ids[2], ids[0]])
    assert [r.name for r in rows] == ["a", "c"]
    for row in rows:
        check_row(row)
    assert q.books_by_ids(ids=[]) == []
    names = q.book_names_of(author=author, ids=ids, skip="b", excluded=[ids[3]])
    assert names == ["a", "c"]
    assert q.book_names_of(author=author, ids=ids, skip="x", excluded=[]) == ["a", "b", "c", "d"]
    assert q.book_names_of(author=author + 1, ids=ids, skip="x", excluded=[]) == []


def test_copyfrom_inserts_every_row(q: library.Querier) -> None:
    author = _author(q)
    rows = [
        library.CopyBooksParams(author_id=author, name=n, code=n, sku=feature_types.Sku(n))
        for n in ("x", "y")
    ]
    assert q.copy_books(rows) == 2
    assert q.book_names() == ["x", "y"]
    assert q.count_books() == 2


def test_repeated_names_and_embeds(q: library.Querier) -> None:
    author = _author(q)
    book = _book(q, author, "a")
    [row] = q.authors_and_books()
    check_row(row)
    assert (row.id, row.id_2, row.name, row.name_2) == (author, book, "ann", "a")
    [embedded] = q.books_with_author()
    check_row(embedded)
    assert embedded.books == models.Books(
        id=book, author_id=author, name="a", code="isbn-a", sku=feature_types.Sku("sku-a")
    )
    assert embedded.authors == q.get_author(id=author)


def test_keyword_and_module_names_round_trip(q: library.Querier) -> None:
    q.add_class(def_=1, none="n", sqlite3="s", dataclasses=2, models="m", str_=None, lambda_=True)
    row = q.get_class(def_=1)
    assert row == models.Class(
        def_=1, none="n", sqlite3="s", dataclasses=2, models="m", str_=None, lambda_=True
    )
    check_row(row)
    assert q.is_(name="a") == 0
    author = _author(q)
    assert q.del_(id=_book(q, author, "a")) == 1


def test_percent_signs_reach_sqlite_as_written(q: library.Querier) -> None:
    assert q.percent() == library.PercentRow(text="100%", rest=1)


def test_spellings_typed_by_affinity_round_trip(q: library.Querier) -> None:
    q.add_spelling(small=7, code="c", note=None, ratio=0.5, ref="0b9e", at="12:00", raw=b"\x00")
    [row] = q.get_spellings()
    check_row(row)
    assert row == models.Spellings(
        id=1, small=7, code="c", note=None, ratio=0.5, ref="0b9e", at="12:00", raw=b"\x00"
    )


def test_an_override_of_any_types_expressions_sqlc_cannot(q: library.Querier) -> None:
    assert q.extremes() == library.ExtremesRow(top=None, lowest=0)
    _author(q, "zed")
    row = q.extremes()
    check_row(row)
    assert row == library.ExtremesRow(top=4.5, lowest="zed")


def test_bare_placeholders_around_a_slice_bind_in_order(q: library.Querier) -> None:
    author = _author(q)
    ids = [_book(q, author, n) for n in "abcd"]
    assert q.bare_around_slice(name="b", ids=ids, limit=2) == ["a", "c"]
    assert q.bare_around_slice(name="b", ids=[], limit=2) == []


def test_an_embed_on_the_outer_side_of_a_join_is_none_when_missing(q: library.Querier) -> None:
    ann = _author(q, "ann")
    bob = _author(q, "bob")
    _book(q, ann, "a")
    rows = q.authors_with_books()
    for row in rows:
        check_row(row)
    assert [(r.authors and r.authors.id, r.books and r.books.name) for r in rows] == [
        (ann, "a"),
        (bob, None),
    ]


def test_a_slice_of_decimals_converts_each_value(q: library.Querier) -> None:
    _author(q, "ann")
    q.add_author(name="bob", rating=None, price=decimal.Decimal("3"))
    assert q.authors_priced_at(prices=[decimal.Decimal("9.99"), decimal.Decimal("3.00")]) == [
        "ann",
        "bob",
    ]
    assert q.authors_priced_at(prices=[decimal.Decimal("1")]) == []


def test_a_one_of_nullif_tells_a_null_from_no_row(q: library.Querier) -> None:
    # sqlc reports NULLIF NOT NULL; it is NULL when its arguments are equal.
    ann = _author(q, "ann")
    assert q.name_unless(unless="bob", id=ann) == library.NameUnlessRow(name="ann")
    assert q.name_unless(unless="ann", id=ann) == library.NameUnlessRow(name=None)
    assert q.name_unless(unless="ann", id=ann + 1) is None


def test_rounding_functions_have_the_types_sqlite_returns(q: library.Querier) -> None:
    # sqlc says ceil(), floor() and trunc() return an INTEGER; SQLite
    # returns a REAL for a REAL.
    q.add_spelling(small=7, code="c", note=None, ratio=2.5, ref="0b9e", at=None, raw=None)
    [spelling] = q.get_spellings()
    row = q.rounded(id=spelling.id)
    assert row is not None
    check_row(row)
    assert (row.up, row.down, row.whole, row.low) == (2.0, 2.0, spelling.id, -2000.0)
