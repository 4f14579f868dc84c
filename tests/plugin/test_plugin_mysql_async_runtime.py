"""The generated AsyncQuerier runs on asyncmy against a real MariaDB server.

It is the same golden package as the sync tests' (mysql_features, with
emit_async), on the session's throwaway server; asyncmy must return the
types PyMySQL does, which the sync Querier's annotations promise.
"""

import dataclasses
import urllib.parse
from collections.abc import AsyncIterator

import asyncmy
import asyncmy.errors

# plugin_harness first: it puts the golden packages on the path.
import plugin_harness  # noqa: F401
import pytest
from mysql_features import kinds, models, notes
from mysql_values import FULL, NULLS, kind_args, scratch_database
from runtime_types import check_row

pytestmark = pytest.mark.slow


@pytest.fixture
async def conn(mysql_url: str) -> AsyncIterator[asyncmy.Connection]:
    parts = urllib.parse.urlsplit(mysql_url)
    with scratch_database(mysql_url) as name:
        c = await asyncmy.connect(
            host=parts.hostname, port=parts.port or 3306, user="root", database=name
        )
        try:
            yield c
        finally:
            # Awaited: the database is dropped next, which waits for every
            # session in it to end.
            await c.ensure_closed()


async def create(q: kinds.AsyncQuerier, k: models.Kind) -> int:
    """Inserts k (its id aside) through the generated method; returns the new id."""
    return await q.create_kind(**kind_args(k))


@pytest.mark.parametrize("kind", [FULL, NULLS], ids=["values", "nulls"])
async def test_every_type_round_trips(conn: asyncmy.Connection, kind: models.Kind) -> None:
    q = kinds.AsyncQuerier(conn)
    new_id = await create(q, kind)
    got = await q.get_kind(id=new_id)
    assert got == dataclasses.replace(kind, id=new_id)
    check_row(got)


async def test_commands_run_and_report_what_they_did(conn: asyncmy.Connection) -> None:
    q = kinds.AsyncQuerier(conn)
    new_id = await create(q, dataclasses.replace(FULL, name="50%"))
    assert await q.rename_kind(name="50%", id=new_id + 1) == 0
    result = await q.retag_kind(tags=frozenset(), id=new_id)
    assert result == kinds.ExecResult(rowcount=1, lastrowid=0)
    assert await q.find_like(name="50%") == [
        kinds.FindLikeRow(id=new_id, label="50%?%", five_mod=2)
    ]
    assert await q.no_params_percent() == "100%"
    assert [r.id for r in await q.kinds_by_ids(ids=[new_id], mood=models.KindsMood.SAD)] == [new_id]
    assert await q.kinds_by_ids(ids=[], mood=models.KindsMood.SAD) == []
    assert await q.kind_names() == ["50%"]
    assert await q.count_kinds() == 1
    await q.delete_kind(id=new_id)
    assert await q.get_kind(id=new_id) is None


async def test_batch_copy_embed_and_execlastid(conn: asyncmy.Connection) -> None:
    kind = await create(kinds.AsyncQuerier(conn), FULL)
    q = notes.AsyncQuerier(conn)
    await q.add_notes([notes.AddNotesParams(kind, "one", frozenset({"y"}), None)])
    assert await q.copy_notes([]) == 0
    rows = [notes.CopyNotesParams(kind, "c0", frozenset(), models.NotesState.CLOSED)]
    assert await q.copy_notes(rows * 2) == 2
    embedded = await q.notes_with_kind(kind_id=kind)
    assert [(r.note.note, r.note.labels, r.note.state) for r in embedded] == [
        ("one", frozenset({"y"}), None),
        ("c0", frozenset(), models.NotesState.CLOSED),
        ("c0", frozenset(), models.NotesState.CLOSED),
    ]
    for row in embedded:
        check_row(row)
    with pytest.raises(asyncmy.errors.DataError, match="AddPlain generated no AUTO_INCREMENT"):
        await q.add_plain(k="x")
