"""The generated PyMySQL Querier runs on a real MariaDB server, every type round-tripped.

It uses the golden package of the mysql_features case on the session's
throwaway server (tests/conftest.py's ``mysql_url``; skipped, or failed on
CI, without MariaDB's binaries). Each test gets a database of its own,
made from the case's schema and dropped after.
"""

import dataclasses
import pathlib
import urllib.parse
from collections.abc import Iterator

# plugin_harness first: it puts the golden packages on the path.
import plugin_harness
import pymysql
import pymysql.cursors
import pytest
from mysql_features import kinds, models, notes
from mysql_values import FULL, NULLS, Conn, connect, kind_args, scratch_database
from runtime_types import check, check_row

pytestmark = pytest.mark.slow


@pytest.fixture
def conn(mysql_url: str) -> Iterator[Conn]:
    with scratch_database(mysql_url) as name, connect(mysql_url, name) as c:
        yield c


def create(q: kinds.Querier, k: models.Kind) -> int:
    """Inserts k (its id aside) through the generated method; returns the new id."""
    return q.create_kind(**kind_args(k))


@pytest.mark.parametrize("kind", [FULL, NULLS], ids=["values", "nulls"])
def test_every_type_round_trips(conn: Conn, kind: models.Kind) -> None:
    q = kinds.Querier(conn)
    new_id = create(q, kind)
    got = q.get_kind(id=new_id)
    assert got == dataclasses.replace(kind, id=new_id)
    check_row(got)


def test_an_empty_set_and_false_are_not_null(
    conn: Conn,
) -> None:
    q = kinds.Querier(conn)
    new_id = create(q, dataclasses.replace(FULL, flag=False, tags=frozenset()))
    got = q.get_kind(id=new_id)
    assert got is not None
    assert got.flag is False
    assert got.tags == frozenset()


def test_enum_parameters_and_results_are_members(
    conn: Conn,
) -> None:
    q = kinds.Querier(conn)
    first = create(q, FULL)
    create(q, dataclasses.replace(FULL, mood=models.KindsMood.SAD))
    rows = q.list_kinds_by_mood(mood=models.KindsMood.SO_SO)
    assert rows == [kinds.ListKindsByMoodRow(first, FULL.name, models.KindsMood.SO_SO)]
    check(rows[0].mood, models.KindsMood)


def test_exec_commands_report_what_they_did(
    conn: Conn,
) -> None:
    q = kinds.Querier(conn)
    new_id = create(q, FULL)
    assert q.rename_kind(name="other", id=new_id) == 1
    assert q.rename_kind(name="other", id=new_id + 1) == 0
    result = q.retag_kind(tags=frozenset({"green"}), id=new_id)
    assert result == kinds.ExecResult(rowcount=1, lastrowid=0)
    got = q.get_kind(id=new_id)
    assert got is not None
    assert got.name == "other"
    assert got.tags == frozenset({"green"})
    assert q.count_kinds() == 1
    q.delete_kind(id=new_id)
    assert q.count_kinds() == 0
    assert q.get_kind(id=new_id) is None


def test_execlastid_refuses_an_insert_that_made_no_id(
    conn: Conn,
) -> None:
    with pytest.raises(pymysql.err.DataError, match="AddPlain generated no AUTO_INCREMENT id"):
        notes.Querier(conn).add_plain(k="x")


def test_percent_and_question_marks_in_text_reach_the_server_as_written(
    conn: Conn,
) -> None:
    q = kinds.Querier(conn)
    new_id = create(q, dataclasses.replace(FULL, name="50%"))
    assert q.find_like(name="50%") == [kinds.FindLikeRow(id=new_id, label="50%?%", five_mod=2)]
    assert q.find_like(name="50") == []
    assert q.no_params_percent() == "100%"


def test_slices_take_lists_and_the_empty_list_matches_nothing(
    conn: Conn,
) -> None:
    q = kinds.Querier(conn)
    ids = [create(q, dataclasses.replace(FULL, name=f"n{i}")) for i in range(3)]
    sad = models.KindsMood.SAD
    assert [r.id for r in q.kinds_by_ids(ids=[ids[2], ids[0]], mood=sad)] == [ids[0], ids[2]]
    assert q.kinds_by_ids(ids=[], mood=sad) == []
    assert q.kinds_by_ids(ids=ids, mood=models.KindsMood.SO_SO) == []


def test_values_of_one_column_and_expressions(
    conn: Conn,
) -> None:
    q = kinds.Querier(conn)
    # max() over no rows is a row holding NULL, not "no row".
    assert q.max_amount() == kinds.MaxAmountRow(top=None)
    assert q.kind_names() == []
    new_id = create(q, FULL)
    assert q.max_amount() == kinds.MaxAmountRow(top=FULL.amount)
    assert q.kind_names() == [FULL.name]
    assert q.is_named(name=FULL.name, id=new_id) is True
    assert q.is_named(name="else", id=new_id) is False


def test_batch_copy_and_embed(conn: Conn) -> None:
    kind = create(kinds.Querier(conn), FULL)
    q = notes.Querier(conn)
    q.add_note(kind_id=kind, note="one", labels=frozenset({"x"}), state=None)
    q.add_notes([])
    q.add_notes([notes.AddNotesParams(kind, "two", frozenset(), models.NotesState.OPEN)])
    assert q.copy_notes([]) == 0
    rows = [notes.CopyNotesParams(kind, f"c{i}", frozenset({"x", "y"}), None) for i in range(3)]
    assert q.copy_notes(rows) == 3
    listed = q.list_notes()
    assert [(n.note, n.labels, n.state) for n in listed] == [
        ("one", frozenset({"x"}), None),
        ("two", frozenset(), models.NotesState.OPEN),
        *[(f"c{i}", frozenset({"x", "y"}), None) for i in range(3)],
    ]
    embedded = q.notes_with_kind(kind_id=kind)
    assert [r.note for r in embedded] == listed
    assert {r.name for r in embedded} == {FULL.name}
    for row in embedded:
        check_row(row)


def test_named_and_bare_parameters_bind_in_the_order_of_the_text(conn: Conn) -> None:
    # sqlc numbers the bare ? before the named ones; the values still go to
    # the placeholders they belong to.
    kind = create(kinds.Querier(conn), FULL)
    q = notes.Querier(conn)
    for note in ("one", "two"):
        q.add_note(kind_id=kind, note=note, labels=frozenset(), state=None)
    assert q.other_notes(kind_id=kind, note="one") == ["two"]
    first = q.list_notes()[0].id
    q.rename_notes([notes.RenameNotesParams(id=first, note="uno")])
    assert [n.note for n in q.list_notes()] == ["uno", "two"]


def test_rows_come_as_tuples_whatever_the_connections_cursor_class(mysql_url: str) -> None:
    with connect(mysql_url) as c, c.cursor() as cur:
        cur.execute("SELECT 1")
    dict_conn = pymysql.connect(
        host=urllib.parse.urlsplit(mysql_url).hostname,
        port=urllib.parse.urlsplit(mysql_url).port or 3306,
        user="root",
        cursorclass=pymysql.cursors.DictCursor,
    )
    with dict_conn:
        q = kinds.Querier(dict_conn)  # type: ignore[arg-type]
        assert q.no_params_percent() == "100%"


def test_each_constant_prepares_on_the_server_as_its_method_assumes(
    mysql_url: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the server named, the plugin prepares every constant there (its
    # parameters and result columns counted) and fails naming any that differs.
    monkeypatch.setenv("SQLC_GEN_JOBTABLE_MYSQL_URL", mysql_url)
    golden = plugin_harness.read_tree(plugin_harness.GOLDEN / "mysql_features")
    assert plugin_harness.generate_case("mysql_features", tmp_path) == golden
