"""The generated psycopg Querier and AsyncQuerier run on a real PostgreSQL server.

They use the golden packages of the postgres_async and postgres_pydantic
cases. Each test gets a schema of its own (a random name, dropped after)
holding the case's schema. The server is JOBTABLE_TEST_POSTGRES_URL (default
postgresql://postgres@127.0.0.1:5432/test); when it cannot be reached the
tests are skipped, except on CI (CI set), where they fail.
"""

import asyncio
import dataclasses
import datetime
import decimal
import secrets
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from plugin_harness import CASES
from postgres_async import accounts, models, schema
from postgres_pydantic import events, settings
from postgres_pydantic import models as pydantic_models
from runtime_types import check_row

pytestmark = pytest.mark.postgres

NAIVE = datetime.datetime(2024, 2, 29, 23, 59, 58, 123456)
AWARE = datetime.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=datetime.UTC)


@pytest.fixture(scope="module")
def server_url(pg_server: str) -> str:
    """The server's URL (tests/conftest.py skips, or fails on CI, when it is down)."""
    return pg_server


def _schema_fixture(server_url: str, schema_sql: str) -> Iterator[str]:
    name = f"plugin_test_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
        try:
            with psycopg.connect(server_url, autocommit=True, options=f"-csearch_path={name}") as c:
                c.execute(schema_sql.encode())
            yield name
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.fixture
def accounts_schema(server_url: str) -> Iterator[str]:
    yield from _schema_fixture(server_url, schema.SCHEMA)


@pytest.fixture
def events_schema(server_url: str) -> Iterator[str]:
    yield from _schema_fixture(server_url, (CASES / "postgres_pydantic" / "schema.sql").read_text())


def _connect(server_url: str, schema_name: str) -> psycopg.Connection[psycopg.rows.TupleRow]:
    return psycopg.connect(server_url, autocommit=True, options=f"-csearch_path={schema_name}")


@pytest.fixture
def querier(server_url: str, accounts_schema: str) -> Iterator[accounts.Querier]:
    with _connect(server_url, accounts_schema) as conn:
        yield accounts.Querier(conn)


@pytest.fixture
def events_querier(server_url: str, events_schema: str) -> Iterator[events.Querier]:
    with _connect(server_url, events_schema) as conn:
        yield events.Querier(conn)


def _every_type(handle: str = "ada") -> models.Account:
    """An account with a value in every column; id and ticket are the server's."""
    return models.Account(
        id=0,
        ticket=0,
        handle=handle,
        name="Ada Lovelace",
        bio="Wrote the first program.",
        age=36,
        score=-2147483648,
        visits=2**62,
        active=True,
        ratio=0.5,
        weight=1e-300,
        balance=decimal.Decimal("1234567890.12"),
        avatar=b"\x00\xff\x10",
        token=uuid.UUID("12345678-1234-5678-1234-567812345678"),
        settings={"theme": "dark", "sizes": [1, 2.5], "beta": None, "on": True},
        profile=["a", {"b": 1}],
        created_at=NAIVE,
        updated_at=AWARE,
        birthday=datetime.date(1815, 12, 10),
        tags=["math", "poetry"],
        lucky=[7, None, 13],
    )


def _only_required(handle: str = "bob") -> models.Account:
    """An account with every nullable column NULL."""
    return models.Account(
        id=0,
        ticket=0,
        handle=handle,
        name="Bob",
        bio=None,
        age=None,
        score=0,
        visits=None,
        active=False,
        ratio=None,
        weight=0.0,
        balance=decimal.Decimal("0.00"),
        avatar=None,
        token=uuid.UUID(int=1),
        settings=None,
        profile={},
        created_at=NAIVE,
        updated_at=None,
        birthday=None,
        tags=[],
        lucky=None,
    )


def _create(querier: accounts.Querier, account: models.Account) -> models.Account:
    created = querier.create_account(
        handle=account.handle,
        name=account.name,
        bio=account.bio,
        age=account.age,
        score=account.score,
        visits=account.visits,
        active=account.active,
        ratio=account.ratio,
        weight=account.weight,
        balance=account.balance,
        avatar=account.avatar,
        token=account.token,
        settings=account.settings,
        profile=account.profile,
        created_at=account.created_at,
        updated_at=account.updated_at,
        birthday=account.birthday,
        tags=account.tags,
        lucky=account.lucky,
    )
    assert created is not None
    return created


async def _acreate(querier: accounts.AsyncQuerier, account: models.Account) -> models.Account:
    created = await querier.create_account(
        handle=account.handle,
        name=account.name,
        bio=account.bio,
        age=account.age,
        score=account.score,
        visits=account.visits,
        active=account.active,
        ratio=account.ratio,
        weight=account.weight,
        balance=account.balance,
        avatar=account.avatar,
        token=account.token,
        settings=account.settings,
        profile=account.profile,
        created_at=account.created_at,
        updated_at=account.updated_at,
        birthday=account.birthday,
        tags=account.tags,
        lucky=account.lucky,
    )
    assert created is not None
    return created


def _with_server_keys(sent: models.Account, created: models.Account) -> models.Account:
    return dataclasses.replace(sent, id=created.id, ticket=created.ticket)


def test_every_type_round_trips(querier: accounts.Querier) -> None:
    sent = _every_type()
    created = _create(querier, sent)
    assert created == _with_server_keys(sent, created)
    assert querier.get_account(id=created.id) == created


def test_values_come_back_as_their_python_types(querier: accounts.Querier) -> None:
    got = _create(querier, _every_type())
    assert isinstance(got.balance, decimal.Decimal)
    assert isinstance(got.token, uuid.UUID)
    assert isinstance(got.avatar, bytes)
    assert got.created_at.tzinfo is None
    assert got.updated_at is not None
    assert got.updated_at.tzinfo is not None
    assert type(got.birthday) is datetime.date


def test_nulls_round_trip_as_none(querier: accounts.Querier) -> None:
    sent = _only_required()
    created = _create(querier, sent)
    assert created == _with_server_keys(sent, created)


def test_serial_columns_are_assigned_by_the_server(querier: accounts.Querier) -> None:
    first = _create(querier, _only_required("first"))
    second = _create(querier, _only_required("second"))
    assert (second.id - first.id, second.ticket - first.ticket) == (1, 1)


def test_json_scalars_round_trip(querier: accounts.Querier) -> None:
    values: list[models.JSONValue] = ["text", 3, 2.5, False]
    for value in values:
        sent = dataclasses.replace(_only_required(f"json-{value!r}"), profile=value)
        assert _create(querier, sent).profile == value


def test_one_returns_none_when_no_row_matches(querier: accounts.Querier) -> None:
    assert querier.get_account(id=404) is None


def test_one_with_an_aggregate_counts(querier: accounts.Querier) -> None:
    _create(querier, _every_type("a"))
    _create(querier, _only_required("b"))
    assert querier.count_active(active=True) == 1


def test_many_with_a_null_parameter_matches_null(querier: accounts.Querier) -> None:
    with_bio = _create(querier, _every_type("with"))
    without = _create(querier, _only_required("without"))
    assert querier.list_accounts_by_bio(bio=None) == [
        accounts.ListAccountsByBioRow(id=without.id, handle="without", bio=None)
    ]
    assert [r.id for r in querier.list_accounts_by_bio(bio=with_bio.bio)] == [with_bio.id]


def test_literal_percent_and_dollar_in_strings_reach_the_server(
    querier: accounts.Querier,
) -> None:
    match = _create(querier, _only_required("xx-50%-xx"))
    _create(querier, _only_required("other"))
    assert querier.search_handles(fragment="50%") == [
        accounts.SearchHandlesRow(id=match.id, handle="xx-50%-xx", note="costs $1 or 100%")
    ]


def test_execrows_returns_the_number_of_rows_changed(querier: accounts.Querier) -> None:
    created = _create(querier, _only_required())
    assert querier.set_bio(bio="new", id=created.id) == 1
    assert querier.set_bio(bio="new", id=404) == 0


def test_exec_runs_the_statement(querier: accounts.Querier) -> None:
    created = _create(querier, _only_required())
    querier.delete_account(id=created.id)
    assert querier.get_account(id=created.id) is None


def test_async_querier_round_trips_every_type(server_url: str, accounts_schema: str) -> None:
    async def run() -> tuple[models.Account, models.Account | None]:
        async with await psycopg.AsyncConnection.connect(
            server_url, autocommit=True, options=f"-csearch_path={accounts_schema}"
        ) as conn:
            querier = accounts.AsyncQuerier(conn)
            created = await _acreate(querier, _every_type())
            return created, await querier.get_account(id=created.id)

    created, got = asyncio.run(run())
    assert created == _with_server_keys(_every_type(), created)
    assert got == created


def test_async_querier_runs_every_command(server_url: str, accounts_schema: str) -> None:
    async def run() -> tuple[int, list[accounts.ListAccountsByBioRow], int, int | None, bool]:
        async with await psycopg.AsyncConnection.connect(
            server_url, autocommit=True, options=f"-csearch_path={accounts_schema}"
        ) as conn:
            querier = accounts.AsyncQuerier(conn)
            created = await _acreate(querier, _only_required("async"))
            listed = await querier.list_accounts_by_bio(bio=None)
            changed = await querier.set_bio(bio="set", id=created.id)
            counted = await querier.count_active(active=False)
            await querier.delete_account(id=created.id)
            gone = await querier.get_account(id=created.id) is None
            return created.id, listed, changed, counted, gone

    created_id, listed, changed, counted, gone = asyncio.run(run())
    assert listed == [accounts.ListAccountsByBioRow(id=created_id, handle="async", bio=None)]
    assert (changed, counted, gone) == (1, 1, True)


def test_pydantic_models_validate_every_type(events_querier: events.Querier) -> None:
    event_id = uuid.uuid4()
    events_querier.record_event(
        id=event_id,
        kind="signup",
        payload={"user": "ada", "tags": ["x"]},
        notification_settings_override=None,
        happened_at=AWARE,
        amount=decimal.Decimal("9.99"),
    )
    assert events_querier.get_event(id=event_id) == pydantic_models.Event(
        id=event_id,
        kind="signup",
        payload={"user": "ada", "tags": ["x"]},
        notification_settings_override=None,
        happened_at=AWARE,
        amount=decimal.Decimal("9.99"),
    )


def test_pydantic_row_class_and_execrows(events_querier: events.Querier) -> None:
    event_id = uuid.uuid4()
    events_querier.record_event(
        id=event_id,
        kind="k",
        payload=[1, 2],
        notification_settings_override={"mute": True},
        happened_at=AWARE,
        amount=None,
    )
    assert events_querier.list_event_summaries(kind="k") == [
        events.ListEventSummariesRow(
            id=event_id,
            payload=[1, 2],
            notification_settings_override={"mute": True},
            amount=None,
        )
    ]
    assert events_querier.clear_overrides() == 1
    assert events_querier.clear_overrides() == 0


def test_pydantic_fields_named_like_basemodel_attributes_are_aliased(
    server_url: str, events_schema: str
) -> None:
    with _connect(server_url, events_schema) as conn:
        q = settings.Querier(conn)
        row = q.put_setting(
            id=1,
            json={"a": 1},
            schema="s",
            copy=None,
            model_config=7,
            level=pydantic_models.Level.WARN,
        )
        assert row is not None
        check_row(row)
        assert (row.json_, row.schema_, row.copy_, row.model_config_) == ({"a": 1}, "s", None, 7)
        assert row.level is pydantic_models.Level.WARN
        # The SQL names stay the fields' aliases, and BaseModel keeps its methods.
        assert row.model_dump(by_alias=True)["json"] == {"a": 1}
        assert row.model_copy() == row
        levels = [pydantic_models.Level.WARN, pydantic_models.Level.DEBUG]
        assert q.settings_at_levels(levels=levels) == [
            settings.SettingsAtLevelsRow(id=1, level=pydantic_models.Level.WARN)
        ]
        q.set_schemas([settings.SetSchemasParams(schema_="t", json_=[2], id=1)])
        assert q.get_setting(id=1) == row.model_copy(update={"schema_": "t", "json_": [2]})
        again = q.put_setting(
            id=2, json=None, schema="u", copy="c", model_config=0, level=pydantic_models.Level.INFO
        )
        assert again is not None
        assert again.copy_ == "c"


def test_batchexec_converts_every_row_like_a_single_statement(
    querier: accounts.Querier,
) -> None:
    first = _create(querier, _every_type("first"))
    second = _create(querier, _only_required("second"))
    querier.set_bios_and_settings(
        [
            accounts.SetBiosAndSettingsParams(bio=None, settings={"a": [1, None]}, id=first.id),
            accounts.SetBiosAndSettingsParams(bio="set", settings=None, id=second.id),
        ]
    )
    got_first = querier.get_account(id=first.id)
    got_second = querier.get_account(id=second.id)
    assert got_first is not None
    assert got_second is not None
    assert (got_first.bio, got_first.settings) == (None, {"a": [1, None]})
    assert (got_second.bio, got_second.settings) == ("set", None)


def test_async_batchexec_runs_every_row(server_url: str, accounts_schema: str) -> None:
    async def run() -> list[str | None]:
        async with await psycopg.AsyncConnection.connect(
            server_url, autocommit=True, options=f"-csearch_path={accounts_schema}"
        ) as conn:
            querier = accounts.AsyncQuerier(conn)
            created = [await _acreate(querier, _only_required(f"a{i}")) for i in range(3)]
            await querier.set_bios_and_settings(
                accounts.SetBiosAndSettingsParams(bio=f"bio {c.id}", settings=None, id=c.id)
                for c in created
            )
            return [
                row.bio for c in created if (row := await querier.get_account(id=c.id)) is not None
            ]

    bios = asyncio.run(run())
    assert len(bios) == 3
    assert all(bio is not None and bio.startswith("bio ") for bio in bios)
