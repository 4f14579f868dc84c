"""Queries whose file holds multi-byte UTF-8 run as written, on both engines.

The golden packages sqlite_multibyte and postgres_multibyte come from query
files with an em dash, CJK text and emoji before, inside and after queries,
in comments and in string literals. sqlc 1.31 cut SQLite query text at
character offsets as if they were bytes; these tests run the constants, so
a wrong cut fails here as well as in the plugin's own check.
"""

import pathlib
import secrets
import sqlite3
from collections.abc import Iterator

import psycopg
import pytest
from plugin_harness import GOLDEN
from postgres_multibyte import notes as pg_notes
from postgres_multibyte import schema as pg_schema
from sqlite_multibyte import notes, schema

assert pathlib.Path(notes.__file__).parent == GOLDEN / "sqlite_multibyte"


@pytest.fixture
def sqlite_querier(tmp_path: pathlib.Path) -> Iterator[notes.Querier]:
    conn = sqlite3.connect(tmp_path / "test.db", isolation_level=None)
    conn.executescript(schema.SCHEMA)
    yield notes.Querier(conn)
    conn.close()


@pytest.fixture
def pg_querier(pg_server: str) -> Iterator[pg_notes.Querier]:
    name = f"plugin_test_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
        try:
            options = f"-csearch_path={name}"
            with psycopg.connect(pg_server, autocommit=True, options=options) as conn:
                conn.execute(pg_schema.SCHEMA.encode())
                yield pg_notes.Querier(conn)
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


def test_sqlite_constants_are_the_statements_of_the_file() -> None:
    assert notes.CREATE_NOTE == "INSERT INTO notes (title) VALUES (?)\n"
    assert notes.RENAME_NOTE == (
        "UPDATE notes SET title = ? WHERE id = ? AND title <> 'ünïcödé — 名前'\n"
    )


def test_sqlite_comments_with_multibyte_text_become_the_docstrings() -> None:
    assert notes.Querier.get_note.__doc__ == "一件を取得する。"
    # As sqlc does on both engines, the first query keeps the comment that
    # opens the file above its own.
    doc = notes.Querier.create_note.__doc__
    assert doc is not None
    assert doc.split("\n")[1].strip() == "Adds a note — its body defaults to 'café — ☕'."


def test_sqlite_literals_of_every_width_match(sqlite_querier: notes.Querier) -> None:
    for title in ("é", "—", "🎉", "plain"):
        sqlite_querier.create_note(title=title)
    found = sqlite_querier.notes_titled(title="plain")
    assert [row.title for row in found] == ["é", "—", "🎉", "plain"]


def test_sqlite_literal_inside_a_query_binds_after_it(sqlite_querier: notes.Querier) -> None:
    kept = sqlite_querier.create_note(title="ünïcödé — 名前")
    renamed = sqlite_querier.create_note(title="old")
    assert sqlite_querier.rename_note(title="x", id=kept) == 0
    assert sqlite_querier.rename_note(title="new — 新", id=renamed) == 1
    note = sqlite_querier.get_note(id=renamed)
    assert note is not None
    assert (note.title, note.body) == ("new — 新", "café — ☕")


def test_sqlite_count_of_a_multibyte_default(sqlite_querier: notes.Querier) -> None:
    sqlite_querier.create_note(title="a")
    row = sqlite_querier.count_defaults()
    assert row == 1


@pytest.mark.postgres
def test_postgres_literals_of_every_width_match(pg_querier: pg_notes.Querier) -> None:
    for title in ("é", "—", "🎉", "plain"):
        pg_querier.create_note(title=title)
    found = pg_querier.notes_titled(title="plain")
    assert [row.title for row in found] == ["é", "—", "🎉", "plain"]
    assert all(row.body == "café — ☕" for row in found)


@pytest.mark.postgres
def test_postgres_literal_inside_a_query_binds_after_it(pg_querier: pg_notes.Querier) -> None:
    kept = pg_querier.create_note(title="ünïcödé — 名前")
    renamed = pg_querier.create_note(title="old — 旧")
    assert kept is not None
    assert renamed is not None
    assert pg_querier.rename_note(title="x", id=kept) == 0
    assert pg_querier.rename_note(title="new", id=renamed) == 1
    assert pg_querier.count_defaults() == 1
