"""The postgres_features golden package runs on a real PostgreSQL server.

The case needs extensions (hstore, citext), enum types and a schema of its
own, so the module creates a throwaway database, applies the case's schema
there, and drops it after. Every row read back is checked field by field
against the annotation the generated code declares.
"""

import datetime
import decimal
import ipaddress
import secrets
import uuid
from collections.abc import Iterator

import feature_types
import psycopg
import psycopg.types.multirange
import psycopg.types.range
import pytest
from feature_types import Email
from plugin_harness import GOLDEN
from postgres_features import models, other, people, schema
from runtime_types import check, check_row

pytestmark = pytest.mark.postgres
assert (GOLDEN / "postgres_features").is_dir()

Conn = psycopg.Connection[psycopg.rows.TupleRow]


@pytest.fixture(scope="module")
def database_url(pg_server: str) -> Iterator[str]:
    name = f"plugin_features_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            url = psycopg.conninfo.make_conninfo(pg_server, dbname=name)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(schema.SCHEMA.encode())
            yield url
        finally:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def conn(database_url: str) -> Iterator[Conn]:
    # Each test runs in a transaction that is rolled back, so tests share the
    # database without seeing each other's rows.
    with psycopg.connect(database_url) as connection:
        yield connection
        connection.rollback()


def _person(q: people.Querier, name: str, mood: models.Mood) -> models.Person:
    person = q.create_person(
        name=name,
        mood=mood,
        past_moods=[models.Mood.A_B, models.Mood.CLASS],
        maybe_moods=[models.Mood.SO_SO, None],
        maybe_mood=None,
        email=feature_types.Email("Ann@Example.com"),
    )
    assert person is not None
    return person


def test_enums_round_trip_as_enum_members_in_rows_and_arrays(conn: Conn) -> None:
    q = people.Querier(conn)
    person = _person(q, "ann", models.Mood.V1ST)
    check_row(person)
    assert person.mood is models.Mood.V1ST
    assert person.past_moods == [models.Mood.A_B, models.Mood.CLASS]
    assert person.maybe_moods == [models.Mood.SO_SO, None]
    assert q.get_person(id=person.id) == person


def test_an_array_of_enums_is_a_parameter(conn: Conn) -> None:
    q = people.Querier(conn)
    happy = _person(q, "a", models.Mood.HAPPY)
    _person(q, "b", models.Mood.SAD)
    so_so = _person(q, "c", models.Mood.SO_SO)
    assert q.people_in_moods(moods=[models.Mood.HAPPY, models.Mood.SO_SO]) == [happy.id, so_so.id]
    assert q.people_in_moods(moods=[]) == []


def test_sqlc_slice_binds_a_list(conn: Conn) -> None:
    q = people.Querier(conn)
    a = _person(q, "a", models.Mood.HAPPY)
    _person(q, "b", models.Mood.SAD)
    c = _person(q, "c", models.Mood.SAD)
    assert q.people_by_ids(ids=[c.id, a.id]) == ["a", "c"]
    assert q.people_by_ids(ids=[]) == []


def test_sqlc_slice_under_in_and_not_in_takes_empty_one_and_many(conn: Conn) -> None:
    # sqlc leaves IN ($1) on PostgreSQL, which would compare an id with the
    # whole array: the plugin compares it with each element.
    q = people.Querier(conn)
    a = _person(q, "a", models.Mood.HAPPY)
    b = _person(q, "b", models.Mood.SAD)
    c = _person(q, "c", models.Mood.SO_SO)
    sad = [models.Mood.SAD]
    assert q.people_in_slice(ids=[], moods=[], skip="") == []
    assert q.people_in_slice(ids=[b.id], moods=[], skip="") == ["b"]
    assert q.people_in_slice(ids=[b.id], moods=sad, skip="") == []
    assert q.people_in_slice(ids=[a.id, b.id, c.id], moods=sad, skip="c") == ["a"]
    assert q.people_in_slice(ids=[c.id, a.id, b.id], moods=[], skip="") == ["a", "b", "c"]


def test_a_one_of_nullif_or_a_cast_max_tells_a_null_from_no_row(conn: Conn) -> None:
    # sqlc reports both NOT NULL; NULLIF is NULL when its arguments are
    # equal, max over no rows is NULL.
    q = people.Querier(conn)
    ann = _person(q, "ann", models.Mood.HAPPY)
    assert q.name_unless(unless="bob", id=ann.id) == people.NameUnlessRow(name="ann")
    assert q.name_unless(unless="ann", id=ann.id) == people.NameUnlessRow(name=None)
    assert q.name_unless(unless="ann", id=ann.id + 1) is None
    assert q.last_pet_id() == people.LastPetIdRow(last=None)
    q.add_pet(owner_id=ann.id, name="rex")
    last = q.last_pet_id()
    assert last is not None
    assert type(last.last) is int


def test_expressions_have_the_types_the_server_returns(conn: Conn) -> None:
    # sqlc says ceil() is a float, NULLIF() a bool and generate_series() a
    # bigint; the plugin takes the server's types, which psycopg returns.
    q = people.Querier(conn)
    ann = _person(q, "ann", models.Mood.HAPPY)
    row = q.server_typed(unless=0, id=ann.id)
    assert row is not None
    check_row(row)
    assert row.kept == ann.id
    assert row.magnitude == decimal.Decimal(ann.id)
    day = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    days = q.days(start=day, stop=day + datetime.timedelta(days=2))
    check(days, list[datetime.datetime])
    assert len(days) == 3


def test_repeated_column_names_get_numbered_fields(conn: Conn) -> None:
    q = people.Querier(conn)
    owner = _person(q, "ann", models.Mood.HAPPY)
    added = q.add_pet(owner_id=owner.id, name="rex")
    check_row(added)
    assert (added.rowcount, added.status) == (1, "INSERT 0 1")
    [row] = q.people_and_pets()
    check_row(row)
    assert (row.id, row.name, row.name_2) == (owner.id, "ann", "rex")
    [star] = q.star_over_join()
    check_row(star)
    assert (star.id, star.id_2, star.owner_id, star.name_2) == (owner.id, row.id_2, owner.id, "rex")


def test_sqlc_embed_nests_the_table_model(conn: Conn) -> None:
    q = people.Querier(conn)
    owner = _person(q, "ann", models.Mood.HAPPY)
    q.add_pet(owner_id=owner.id, name="rex")
    [row] = q.pets_with_owner()
    check_row(row)
    assert row.person == owner
    assert row.pet == "rex"


def test_copyfrom_batchone_and_batchmany(conn: Conn) -> None:
    q = people.Querier(conn)
    ann = _person(q, "ann", models.Mood.HAPPY)
    bob = _person(q, "bob", models.Mood.SAD)
    rows = [people.CopyPetsParams(owner_id=ann.id, name=n) for n in ("a%", "b'")]
    rows.append(people.CopyPetsParams(owner_id=bob.id, name="c\t\\"))
    assert q.copy_pets(rows) == 3
    assert q.count_pets() == 3
    assert q.copy_pets([]) == 0
    ids = [r.id for owner in q.pets_of([people.PetsOfParams(owner_id=ann.id)]) for r in owner]
    names = q.pet_names([people.PetNamesParams(id=i) for i in [*ids, -1]])
    assert names == ["a%", "b'", None]
    groups = q.pets_of([people.PetsOfParams(owner_id=o) for o in (bob.id, -1, ann.id)])
    assert [[p.name for p in g] for g in groups] == [["c\t\\"], [], ["a%", "b'"]]
    for group in groups:
        for pet in group:
            check_row(pet)
    assert q.pet_names([]) == []


def test_one_column_results_are_values(conn: Conn) -> None:
    q = people.Querier(conn)
    assert q.count_pets() == 0
    _person(q, "ann", models.Mood.HAPPY)
    assert q.list_() == ["ann"]
    assert q.in_(name="ann") == 1
    # A nullable column keeps its row, so that NULL and no row differ.
    assert q.maybe_email(id=-1) is None


def test_percent_signs_with_and_without_parameters(conn: Conn) -> None:
    q = people.Querier(conn)
    assert q.percent() == people.PercentRow(text="100%", rest=1)
    assert q.percent_with_param(p1="!", p2=4) == people.PercentWithParamRow(text="100%!", rest=3)


def test_overrides_type_the_columns(conn: Conn) -> None:
    q = other.Querier(conn)
    item = q.add_item(sku=feature_types.Sku("X-1"), grade=models.InventoryGrade.HIGH)
    assert item is not None
    check_row(item)
    assert item.grade is models.InventoryGrade.HIGH
    assert q.grades() == [models.InventoryGrade.HIGH]


def test_names_singular_renamed_and_in_other_schemas(conn: Conn) -> None:
    q = other.Querier(conn)
    q.add_status(id=1, status=models.StatusKind.CLOSED)
    assert q.get_status(id=1) == models.Status(id=1, status=models.StatusKind.CLOSED)
    q.add_news(id=1, headline="h")
    assert q.get_news(id=1) == models.Bulletin(id=1, headline="h")
    q.add_shelf(id=1, title="t")
    assert q.get_shelf(id=1) == models.Shelf(id=1, title="t")
    for row in (q.get_status(id=1), q.get_news(id=1), q.get_shelf(id=1)):
        check_row(row)


def test_a_query_of_no_columns_returns_empty_rows(conn: Conn) -> None:
    # SELECT FROM t (sqlc also writes it for SELECT * FROM a function of no
    # columns) returns a row per match, each of no columns, as sqlc-gen-go does.
    q = other.Querier(conn)
    assert q.bare_shelf(id=1) is None
    q.add_shelf(id=1, title="a")
    q.add_shelf(id=2, title="b")
    assert q.bare_shelves() == [other.BareShelvesRow(), other.BareShelvesRow()]
    assert q.bare_shelf(id=2) == other.BareShelfRow()


def test_network_range_hstore_and_array_types_round_trip(conn: Conn) -> None:
    q = other.Querier(conn)
    Range = psycopg.types.range.Range
    sent = models.Kind(
        id=1,
        host=ipaddress.ip_address("10.0.0.1"),
        maybe_host=ipaddress.ip_interface("2001:db8::1/64"),
        net=ipaddress.ip_network("10.0.0.0/8"),
        span=Range(1, 5),
        big_span=Range(2**40, None),
        amounts=Range(decimal.Decimal("1.5"), decimal.Decimal("2.25"), "[]"),
        days=Range(datetime.date(2024, 1, 1), datetime.date(2024, 2, 1)),
        moments=Range(datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC), None),
        spans=psycopg.types.multirange.Multirange([Range(1, 3), Range(5, 7)]),
        attrs={"a": "1", 'we"ird\\': None, "": "=>"},
        maybe_attrs=None,
        docs=[{"k": [1, None]}, "s", 2],
        maybe_docs=[None, {"x": 1.5}],
        flags=[True, False],
        hosts=[ipaddress.ip_address("::1"), None],
        tags=[Email("A b"), Email('q"uote'), Email("{x}")],
        maybe_tags=[None, Email("NULL"), Email("")],
    )
    q.add_kinds(**{f: getattr(sent, f) for f in sent.__dataclass_fields__})
    got = q.get_kinds(id=1)
    assert got is not None
    check_row(got)
    assert got == sent
    q.add_kinds(
        **{
            **{f: getattr(sent, f) for f in sent.__dataclass_fields__},
            "id": 2,
            "maybe_attrs": {},
            "maybe_docs": None,
            "hosts": None,
        }
    )
    again = q.get_kinds(id=2)
    assert again is not None
    check_row(again)
    assert (again.maybe_attrs, again.maybe_docs, again.hosts) == ({}, None, None)


def test_keyword_and_module_names_round_trip(conn: Conn) -> None:
    q = other.Querier(conn)
    key = uuid.uuid4()
    moment = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    q.add_none(
        class_=1,
        in_="x",
        uuid=key,
        datetime=moment,
        models="m",
        list_=3,
        decimal=decimal.Decimal(1),
    )
    row = q.get_none(class_=1)
    assert row is not None
    check_row(row)
    assert row == models.None_(
        class_=1,
        in_="x",
        uuid=key,
        datetime=moment,
        models="m",
        list_=3,
        decimal=decimal.Decimal(1),
    )
    later = moment + datetime.timedelta(days=1)
    assert q.del_(uuid=key, datetime=later, models="m") == 1


async def test_async_querier_runs_the_new_commands(database_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        q = people.AsyncQuerier(conn)
        person = await q.create_person(
            name="ann",
            mood=models.Mood.HAPPY,
            past_moods=[],
            maybe_moods=None,
            maybe_mood=models.Mood.SAD,
            email=None,
        )
        assert person is not None
        check_row(person)
        assert await q.copy_pets([people.CopyPetsParams(owner_id=person.id, name="x")]) == 1
        [[pet]] = await q.pets_of([people.PetsOfParams(owner_id=person.id)])
        assert await q.pet_names([people.PetNamesParams(id=pet.id)]) == ["x"]
        check(await q.count_pets(), int | None)
        await conn.rollback()


def test_types_without_a_psycopg_loader_round_trip_as_text(conn: Conn) -> None:
    q = other.Querier(conn)
    conn.execute("SET lc_monetary TO 'C'")
    q.add_text_forms(
        id=1,
        cash="12.5",
        doc="<a>1</a>",
        words="b a",
        mac="08:00:2b:01:02:03",
        bits="101",
        spot="(1,2)",
        boxes=["(1,2),(3,4)"],
        lsn=None,
        duo='(1,"a b")',
        duos=["(2,x)", None],
    )
    row = q.get_text_forms(id=1)
    assert row is not None
    check_row(row)
    assert row == models.TextForm(
        id=1,
        cash="$12.50",
        doc="<a>1</a>",
        words="'a' 'b'",
        mac="08:00:2b:01:02:03",
        bits="101",
        spot="(1,2)",
        boxes=["(3,4),(1,2)"],
        lsn=None,
        duo='(1,"a b")',
        duos=["(2,x)", None],
    )


def test_an_embed_on_the_outer_side_of_a_join_is_none_when_missing(conn: Conn) -> None:
    q = people.Querier(conn)
    ann = _person(q, "ann", models.Mood.HAPPY)
    bob = _person(q, "bob", models.Mood.SAD)
    q.add_pet(owner_id=ann.id, name="rex")
    rows = q.people_with_pets()
    for row in rows:
        check_row(row)
    assert [(r.person, r.pet and r.pet.name) for r in rows] == [(ann, "rex"), (bob, None)]


def test_a_list_of_json_values_is_a_parameter(conn: Conn) -> None:
    q = other.Querier(conn)
    Range = psycopg.types.range.Range
    q.add_kinds(
        id=7,
        host=ipaddress.ip_address("10.0.0.1"),
        maybe_host=None,
        net=ipaddress.ip_network("10.0.0.0/8"),
        span=Range(1, 2),
        big_span=None,
        amounts=None,
        days=None,
        moments=None,
        spans=None,
        attrs={},
        maybe_attrs=None,
        docs=[{"k": 1}],
        maybe_docs=None,
        flags=[],
        hosts=None,
        tags=[],
        maybe_tags=None,
    )
    assert q.kinds_with_docs(docs=[{"k": 1}, [2]]) == [7]
    assert q.kinds_with_docs(docs=[{"k": 2}]) == []


def test_void_and_record_results_are_what_psycopg_returns(conn: Conn) -> None:
    q = other.Querier(conn)
    locked = q.lock_for(pg_advisory_xact_lock=42)
    assert locked is not None
    check_row(locked)
    assert locked == other.LockForRow(locked="", kinds=0)
    rec = q.pair_of(a=3)
    check(rec, tuple[str | None, ...] | None)
    assert rec == ("3", "x y", None)
