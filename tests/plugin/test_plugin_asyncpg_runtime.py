"""The generated asyncpg Querier runs on a real PostgreSQL server.

It uses the golden package of the postgres_asyncpg case. Each test gets a
schema of its own (a random name, dropped after) holding the case's schema,
and an asyncpg connection whose search_path is that schema. The server is
JOBTABLE_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test);
when it cannot be reached the tests are skipped, except on CI, where they fail.
"""

import contextlib
import dataclasses
import datetime
import decimal
import ipaddress
import secrets
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from plugin_harness import CASES
from postgres_asyncpg import accounts, events, models, schema
from postgres_asyncpg_pydantic import models as pydantic_models
from postgres_asyncpg_pydantic import notes
from runtime_types import check, check_row

pytestmark = pytest.mark.postgres

NAIVE = datetime.datetime(2024, 2, 29, 23, 59, 58, 123456)
AWARE = datetime.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=datetime.UTC)


@contextlib.asynccontextmanager
async def _schema(pg_server: str, schema_sql: str) -> AsyncIterator[str]:
    """A fresh schema holding schema_sql's tables, dropped with them after."""
    name = f"plugin_test_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(pg_server)
    try:
        await admin.execute(f"CREATE SCHEMA {name}")
        try:
            await admin.execute(f"SET search_path = {name}; {schema_sql}")
            yield name
        finally:
            await admin.execute(f"DROP SCHEMA {name} CASCADE")
    finally:
        await admin.close()


@contextlib.asynccontextmanager
async def _connect(pg_server: str, schema_name: str) -> AsyncIterator[asyncpg.Connection]:
    # money's text form follows lc_monetary: C's is $12.34.
    settings = {"search_path": schema_name, "lc_monetary": "C"}
    connection = await asyncpg.connect(pg_server, server_settings=settings)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
async def schema_name(pg_server: str) -> AsyncIterator[str]:
    async with _schema(pg_server, schema.SCHEMA) as name:
        yield name


@pytest.fixture
async def conn(pg_server: str, schema_name: str) -> AsyncIterator[asyncpg.Connection]:
    async with _connect(pg_server, schema_name) as connection:
        yield connection


@pytest.fixture
async def notes_conn(pg_server: str) -> AsyncIterator[asyncpg.Connection]:
    schema_sql = (CASES / "postgres_asyncpg_pydantic" / "schema.sql").read_text()
    async with _schema(pg_server, schema_sql) as name, _connect(pg_server, name) as connection:
        yield connection


def _every_type(handle: str = "ada") -> models.Account:
    """An account with a value in every column; id is the server's."""
    return models.Account(
        id=0,
        handle=handle,
        name="Ada Lovelace",
        bio="Wrote the first program.",
        code="abc",
        age=36,
        score=-2147483648,
        visits=2**62,
        active=True,
        ratio=0.5,
        weight=1e-300,
        balance=decimal.Decimal("1234567890.12"),
        avatar=b"\x00\xff\x10",
        token=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        settings='{"theme": "dark"}',
        profile='{"b": [1, 2.5, null]}',
        created_at=NAIVE,
        updated_at=AWARE,
        birthday=datetime.date(1815, 12, 10),
        wakes=datetime.time(6, 30, 1, 5),
        wakes_tz=datetime.time(6, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        wait=datetime.timedelta(days=3, seconds=7, microseconds=9),
        host=ipaddress.IPv4Interface("192.0.2.7/24"),
        net=ipaddress.IPv6Network("2001:db8::/32"),
        price="$12.34",
        mood=models.Mood.SO_SO,
        maybe_mood=models.Mood.HAPPY,
        past_moods=[models.Mood.SAD, models.Mood.SO_SO],
        maybe_moods=[models.Mood.HAPPY, None],
        tags=["math", "poetry"],
        lucky=[7, None, 13],
        docs=['{"a": 1}', None],
    )


def _only_required(handle: str = "bob") -> models.Account:
    """An account with every nullable column NULL."""
    return dataclasses.replace(
        _every_type(handle),
        active=False,
        bio=None,
        code=None,
        age=None,
        visits=None,
        ratio=None,
        avatar=None,
        settings=None,
        updated_at=None,
        birthday=None,
        wakes=None,
        wakes_tz=None,
        wait=None,
        host=None,
        net=None,
        price=None,
        maybe_mood=None,
        maybe_moods=None,
        lucky=None,
        docs=None,
        past_moods=[],
        tags=[],
    )


async def _create(querier: accounts.Querier, account: models.Account) -> models.Account:
    values = {f.name: getattr(account, f.name) for f in dataclasses.fields(account)}
    del values["id"]
    created = await querier.create_account(**values)
    assert created is not None
    return created


async def test_every_type_round_trips_with_its_declared_type(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    account = _every_type()
    created = await _create(querier, account)
    check_row(created)
    assert created == dataclasses.replace(account, id=created.id)
    assert await querier.get_account(id=created.id) == created


async def test_nulls_round_trip(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    account = _only_required()
    created = await _create(querier, account)
    check_row(created)
    assert created == dataclasses.replace(account, id=created.id)


async def test_inet_without_a_prefix_is_an_address(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    host = ipaddress.IPv6Address("2001:db8::1")
    created = await _create(querier, dataclasses.replace(_every_type(), host=host))
    check_row(created)
    assert created.host == host


async def test_one_returns_none_for_no_row(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    assert await querier.get_account(id=1) is None
    # A nullable one-column :one keeps its row: NULL differs from no row.
    created = await _create(querier, _only_required())
    assert await querier.mood_of(id=created.id) == accounts.MoodOfRow(maybe_mood=None)
    assert await querier.mood_of(id=created.id + 1) is None


async def test_many_returns_rows_and_values(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    bob = await _create(querier, _only_required("bob"))
    assert await querier.list_accounts_by_bio(bio=None) == [
        accounts.ListAccountsByBioRow(id=bob.id, handle="bob", bio=None)
    ]
    assert await querier.handles_of(ids=[bob.id, ada.id]) == ["ada", "bob"]
    assert await querier.handles_of(ids=[]) == []
    moods = await querier.moods_of()
    assert moods == [models.Mood.SO_SO, models.Mood.SO_SO]
    assert all(type(m) is models.Mood for m in moods)
    assert await querier.count_active(active=True) == 1


async def test_sqlc_slice_under_in_and_not_in_takes_empty_one_and_many(
    conn: asyncpg.Connection,
) -> None:
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    bob = await _create(querier, dataclasses.replace(_every_type("bob"), age=20))
    cy = await _create(querier, dataclasses.replace(_every_type("cy"), age=30))
    assert await querier.handles_in_slice(ids=[], ages=[]) == []
    assert await querier.handles_in_slice(ids=[bob.id], ages=[]) == ["bob"]
    assert await querier.handles_in_slice(ids=[bob.id], ages=[20]) == []
    everyone = [cy.id, ada.id, bob.id]
    assert await querier.handles_in_slice(ids=everyone, ages=[20, 30]) == ["ada"]
    assert await querier.handles_in_slice(ids=everyone, ages=[]) == ["ada", "bob", "cy"]


async def test_expressions_have_the_types_the_server_returns(conn: asyncpg.Connection) -> None:
    # sqlc says ceil() is a float, NULLIF() a bool and generate_series() a
    # bigint; the plugin takes the server's types, which asyncpg returns.
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    row = await querier.server_typed(unless=0, id=ada.id)
    assert row is not None
    check_row(row)
    assert row.kept == ada.id
    day = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    days = await querier.days(start=day, stop=day + datetime.timedelta(days=2))
    check(days, list[datetime.datetime])
    assert len(days) == 3


async def test_literal_percent_and_dollar_stay_as_written(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    created = await _create(querier, _every_type("a%b"))
    rows = await querier.search_handles(fragment="%")
    assert rows == [accounts.SearchHandlesRow(id=created.id, handle="a%b", note="costs $1 or 100%")]


async def test_execrows_and_execresult_count_the_rows(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    await _create(querier, _every_type("eve"))
    assert await querier.set_bio(bio="new", id=ada.id) == 1
    assert await querier.set_bio(bio="new", id=ada.id + 100) == 0
    assert await querier.deactivate_all() == accounts.ExecResult(rowcount=2, status="UPDATE 2")
    assert await querier.deactivate_all() == accounts.ExecResult(rowcount=0, status="UPDATE 0")
    await querier.delete_account(id=ada.id)
    assert await querier.get_account(id=ada.id) is None


@pytest.mark.parametrize(
    ("status", "rows"),
    [
        ("INSERT 0 1", 1),
        ("UPDATE 12", 12),
        ("DELETE 0", 0),
        ("MERGE 3", 3),
        ("COPY 1000000", 1000000),
        ("CREATE TABLE", 0),
        ("", 0),
    ],
)
def test_status_rows_reads_the_count_of_a_status(status: str, rows: int) -> None:
    assert accounts._status_rows(status) == rows


async def test_batchexec_runs_a_statement_per_row(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    bob = await _create(querier, _only_required("bob"))
    await querier.set_bios_and_settings(
        [
            accounts.SetBiosAndSettingsParams(bio=None, settings='{"x": 1}', id=ada.id),
            accounts.SetBiosAndSettingsParams(bio="b", settings=None, id=bob.id),
        ]
    )
    await querier.set_bios_and_settings([])
    got_ada = await querier.get_account(id=ada.id)
    got_bob = await querier.get_account(id=bob.id)
    assert got_ada is not None
    assert (got_ada.bio, got_ada.settings) == (None, '{"x": 1}')
    assert got_bob is not None
    assert (got_bob.bio, got_bob.settings) == ("b", None)


async def test_batchexec_writes_all_rows_or_none(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    rows = [
        accounts.SetBiosAndSettingsParams(bio="changed", settings=None, id=ada.id),
        accounts.SetBiosAndSettingsParams(bio="b", settings="not json", id=ada.id),
    ]
    with pytest.raises(asyncpg.InvalidTextRepresentationError):
        await querier.set_bios_and_settings(rows)
    assert await querier.get_account(id=ada.id) == ada


async def test_copyfrom_writes_each_value_to_its_column(conn: asyncpg.Connection) -> None:
    querier = accounts.Querier(conn)
    ada = await _create(querier, _every_type("ada"))
    copier = events.Querier(conn)
    rows = [
        events.CopyEventsParams(account_id=ada.id, kind=f"kind {i}", at=AWARE) for i in range(3)
    ]
    assert await copier.copy_events(rows) == 3
    assert await copier.copy_events([]) == 0
    listed = await copier.list_events()
    assert [r.event.kind if r.event else None for r in listed] == ["kind 0", "kind 1", "kind 2"]
    assert all(r.account == ada for r in listed)
    for row in listed:
        assert row.event is not None
        check_row(row.event)
    assert await copier.count_events() == 3


async def test_querier_runs_on_a_pool(pg_server: str, schema_name: str) -> None:
    pool = await asyncpg.create_pool(
        pg_server,
        min_size=1,
        max_size=2,
        server_settings={"search_path": schema_name, "lc_monetary": "C"},
    )
    try:
        created = await _create(accounts.Querier(pool), _every_type())
        async with pool.acquire() as acquired:
            assert await accounts.Querier(acquired).get_account(id=created.id) == created
    finally:
        await pool.close()


async def test_pydantic_models_take_asyncpg_values(notes_conn: asyncpg.Connection) -> None:
    querier = notes.Querier(notes_conn)
    token = uuid.uuid4()
    added = await querier.add_note(
        token=token,
        json='{"k": "v"}',
        host=ipaddress.IPv4Address("192.0.2.1"),
        level=pydantic_models.Level.HIGH,
        levels=[pydantic_models.Level.LOW, None],
        amount=decimal.Decimal("0.1"),
        at=AWARE,
    )
    assert added is not None
    check_row(added)
    assert (added.token, added.json_) == (token, '{"k": "v"}')
    assert added.host == ipaddress.IPv4Address("192.0.2.1")
    assert added.levels == [pydantic_models.Level.LOW, None]
    copied = [
        notes.CopyNotesParams(
            token=uuid.UUID(int=i),
            json_="[]",
            level=pydantic_models.Level.LOW,
            amount=decimal.Decimal(i),
            at=AWARE,
        )
        for i in range(2)
    ]
    assert await querier.copy_notes(copied) == 2
    listed = await querier.list_notes()
    assert [n.json_ for n in listed] == ['{"k": "v"}', "[]", "[]"]
    for note in listed:
        check_row(note)
    assert [r.level for r in await querier.levels()] == ["high", "low", "low"]
