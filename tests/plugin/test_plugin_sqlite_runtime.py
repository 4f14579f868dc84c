"""The generated SQLite Querier runs on a real database file.

It uses the golden package of the sqlite_dataclass case, which the golden
tests prove equal to a fresh generation.
"""

import dataclasses
import pathlib
import sqlite3
from collections.abc import Iterator

import pytest
from plugin_harness import GOLDEN
from sqlite_dataclass import models, samples, schema, tags

assert pathlib.Path(samples.__file__).parent == GOLDEN / "sqlite_dataclass"


@pytest.fixture
def conn(tmp_path: pathlib.Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "test.db", isolation_level=None)
    connection.executescript(schema.SCHEMA)
    yield connection
    connection.close()


@pytest.fixture
def querier(conn: sqlite3.Connection) -> samples.Querier:
    return samples.Querier(conn)


def _insert(querier: samples.Querier, *, label: str = "a", flag: bool = True) -> int:
    """Inserts a sample with every nullable column NULL."""
    return querier.insert_sample(
        label=label,
        note=None,
        code="c",
        initial=None,
        nick=None,
        body=None,
        count=0,
        small=None,
        tiny=None,
        big=None,
        ratio=0.0,
        weight=None,
        precise=None,
        rough=None,
        data=None,
        flag=flag,
        maybe=None,
        doc=None,
        seen_at=None,
        born=None,
    )


def test_execlastid_returns_the_rowid_of_the_inserted_row(querier: samples.Querier) -> None:
    first = _insert(querier)
    second = _insert(querier)
    assert second == first + 1
    row = querier.get_sample(id=second)
    assert row is not None
    assert row.id == second


def test_every_type_round_trips(querier: samples.Querier) -> None:
    sent = models.Sample(
        id=0,
        label="label",
        note="note",
        code="x" * 255,
        initial="i",
        nick="nick",
        body="body\nwith lines",
        count=-7,
        small=32767,
        tiny=1,
        big=2**62,
        ratio=0.25,
        weight=1e300,
        precise=3.141592653589793,
        rough=-0.5,
        data=b"\x00\xffbytes",
        flag=True,
        maybe=False,
        doc='{"a": [1, 2]}',
        seen_at="2024-01-02 03:04:05",
        born="2024-01-02",
    )
    row_id = querier.insert_sample(
        label=sent.label,
        note=sent.note,
        code=sent.code,
        initial=sent.initial,
        nick=sent.nick,
        body=sent.body,
        count=sent.count,
        small=sent.small,
        tiny=sent.tiny,
        big=sent.big,
        ratio=sent.ratio,
        weight=sent.weight,
        precise=sent.precise,
        rough=sent.rough,
        data=sent.data,
        flag=sent.flag,
        maybe=sent.maybe,
        doc=sent.doc,
        seen_at=sent.seen_at,
        born=sent.born,
    )
    assert querier.get_sample(id=row_id) == dataclasses.replace(sent, id=row_id)


def test_booleans_come_back_as_bool(querier: samples.Querier) -> None:
    row_id = _insert(querier, flag=False)
    row = querier.get_sample(id=row_id)
    assert row is not None
    assert row.flag is False
    assert type(row.flag) is bool


def test_a_nullable_boolean_comes_back_as_bool_or_none(
    querier: samples.Querier, conn: sqlite3.Connection
) -> None:
    row_id = _insert(querier)
    row = querier.get_sample(id=row_id)
    assert row is not None
    assert row.maybe is None
    conn.execute("UPDATE samples SET maybe = 1 WHERE id = ?", (row_id,))
    row = querier.get_sample(id=row_id)
    assert row is not None
    assert row.maybe is True


def test_null_columns_come_back_as_none(querier: samples.Querier) -> None:
    row = querier.get_sample(id=_insert(querier))
    assert row is not None
    nullable = ["note", "initial", "nick", "body", "small", "tiny", "big", "weight"]
    nullable += ["precise", "rough", "data", "maybe", "doc", "seen_at", "born"]
    assert {name: getattr(row, name) for name in nullable} == dict.fromkeys(nullable)


def test_blob_comes_back_as_bytes_and_real_as_float(
    querier: samples.Querier, conn: sqlite3.Connection
) -> None:
    row_id = _insert(querier)
    # An integer stored in a REAL column comes back as a float.
    conn.execute("UPDATE samples SET data = ?, ratio = 2 WHERE id = ?", (b"\x01", row_id))
    row = querier.get_sample(id=row_id)
    assert row is not None
    assert (row.data, row.ratio, type(row.ratio)) == (b"\x01", 2.0, float)


def test_one_returns_none_when_no_row_matches(querier: samples.Querier) -> None:
    assert querier.get_sample(id=404) is None
    assert querier.get_label(id=404) is None


def test_one_with_a_partial_row_returns_its_own_row_class(querier: samples.Querier) -> None:
    row_id = _insert(querier, label="partial")
    assert querier.get_label(id=row_id) == samples.GetLabelRow(
        id=row_id, label="partial", note=None
    )


def test_one_with_an_aggregate_returns_its_value(querier: samples.Querier) -> None:
    _insert(querier)
    _insert(querier)
    assert querier.count_samples() == 2


def test_many_returns_every_matching_row_in_order(querier: samples.Querier) -> None:
    ids = [_insert(querier, flag=flag) for flag in (True, False, True)]
    rows = querier.list_samples_by_flag(flag=True)
    assert [r.id for r in rows] == [ids[0], ids[2]]
    assert all(isinstance(r, models.Sample) for r in rows)


def test_many_returns_an_empty_list_when_no_row_matches(querier: samples.Querier) -> None:
    assert querier.list_samples_by_flag(flag=True) == []


def test_a_nullable_parameter_binds_none_as_null(querier: samples.Querier) -> None:
    without = _insert(querier, label="without")
    assert querier.list_labels_by_note(note=None) == [
        samples.ListLabelsByNoteRow(id=without, label="without")
    ]
    assert querier.list_labels_by_note(note="anything") == []


def test_execrows_returns_the_number_of_rows_changed(querier: samples.Querier) -> None:
    for _ in range(3):
        _insert(querier, label="old")
    assert querier.rename_samples(new_label="new", old_label="old") == 3
    assert querier.rename_samples(new_label="new", old_label="old") == 0


def test_exec_runs_the_statement(querier: samples.Querier) -> None:
    row_id = _insert(querier)
    querier.delete_sample(id=row_id)
    assert querier.get_sample(id=row_id) is None


def test_positional_parameters_bind_in_order(
    querier: samples.Querier, conn: sqlite3.Connection
) -> None:
    tag_querier = tags.Querier(conn)
    row_id = _insert(querier)
    tag_querier.add_tag(sample_id=row_id, name="b")
    tag_querier.add_tag(sample_id=row_id, name="a")
    assert tag_querier.list_tags(sample_id=row_id) == [
        models.Tag(sample_id=row_id, name="a"),
        models.Tag(sample_id=row_id, name="b"),
    ]
    assert tag_querier.delete_tags(sample_id=row_id) == 2


def test_batchexec_runs_the_statement_once_per_row_in_order(
    querier: samples.Querier, conn: sqlite3.Connection
) -> None:
    tag_querier = tags.Querier(conn)
    row_id = _insert(querier)
    tag_querier.add_tags(
        tags.AddTagsParams(sample_id=row_id, name=name) for name in ("c", "a", "b")
    )
    assert [tag.name for tag in tag_querier.list_tags(sample_id=row_id)] == ["a", "b", "c"]
    assert [r[0] for r in conn.execute("SELECT name FROM tags ORDER BY rowid")] == ["c", "a", "b"]
