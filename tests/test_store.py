"""Store.open and the ids and times the store writes."""

import base64
import importlib.util
import re
import string
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import example, given

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.rows import JobRow, NewJob
from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._errors import StoreError
from jobtable._store import Store
from jobtable._values import id_at, new_id, now, redact_url, timestamp

TIME_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def create(q: Queries) -> None:
    q.insert_jobs(kind="thumbnail", jobs=[NewJob("j1", "{}", now())], now=now())


def get(q: Queries) -> JobRow | None:
    return q.get_job(id="j1")


# Times.


def test_now_is_fixed_width_utc_text() -> None:
    text = now()
    assert TIME_TEXT.match(text), text


def test_now_is_the_current_time() -> None:
    before = datetime.now(UTC)
    text = now()
    after = datetime.now(UTC)
    parsed = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")
    assert before <= parsed <= after


def test_timestamp_keeps_its_width_at_whole_seconds() -> None:
    assert timestamp(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000000Z"


def test_timestamp_converts_to_utc() -> None:
    paris = timezone(timedelta(hours=1))
    assert timestamp(datetime(2026, 1, 2, 3, 0, tzinfo=paris)) == "2026-01-02T02:00:00.000000Z"


def test_timestamp_text_sorts_in_time_order() -> None:
    moments = [
        datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 9, 0, tzinfo=UTC),
        datetime(2026, 1, 1, 10, 0, tzinfo=UTC),
        datetime(2026, 10, 1, tzinfo=UTC),
    ]
    texts = [timestamp(moment) for moment in moments]
    assert sorted(texts) == texts
    assert len({len(text) for text in texts}) == 1


def test_timestamp_refuses_a_naive_datetime() -> None:
    with pytest.raises(ValueError, match="naive"):
        timestamp(datetime(2026, 1, 1))


def strftime_timestamp(moment: datetime) -> str:
    """timestamp as strftime wrote it until issue 18, the reference its faster form must match."""
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}{utc.strftime('-%m-%dT%H:%M:%S.%fZ')}"


OFFSETS = st.builds(
    timezone,
    st.timedeltas(
        min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)
    ),
)


@given(st.datetimes(timezones=st.one_of(st.just(UTC), OFFSETS, st.timezones())))
@example(datetime(1, 1, 1, tzinfo=UTC))
@example(datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
@example(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
@example(datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=timezone(timedelta(hours=-5))))
def test_timestamp_writes_the_text_strftime_wrote(moment: datetime) -> None:
    try:
        expected = strftime_timestamp(moment)
    except OverflowError:  # UTC of a time near year 1 or 9999 is out of range: both refuse it
        with pytest.raises(OverflowError):
            timestamp(moment)
        return
    assert timestamp(moment) == expected


# Ids.


def test_new_id_is_128_bits_of_url_safe_text() -> None:
    job_id = new_id()
    assert len(job_id) == 22  # ceil(128 / 6) base64 characters, no padding
    assert set(job_id) <= set(string.ascii_letters + string.digits + "-_")


SORTED_DIGITS = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
"""An id's 64 characters, in the order of the values they stand for: byte order."""


def id_bytes(job_id: str) -> bytes:
    """The 16 bytes an id writes, each character read as the value of its rank."""
    standard = job_id.translate(
        str.maketrans(
            SORTED_DIGITS, string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"
        )
    )
    return base64.b64decode(standard + "==")


def test_a_new_id_is_16_bytes_beginning_with_the_time_in_milliseconds() -> None:
    for _ in range(100):
        before = int(datetime.now(UTC).timestamp() * 1000)
        job_id = new_id()
        after = int(datetime.now(UTC).timestamp() * 1000)
        raw = id_bytes(job_id)
        assert len(raw) == 16
        millis = int.from_bytes(raw[:6], "big")
        assert millis >> 47 == 1  # the top bit is set
        assert before - 1 <= millis - (1 << 47) <= after + 1


@given(st.integers(0, (1 << 47) - 1), st.integers(0, (1 << 47) - 1))
@example(0, (1 << 47) - 1)
@example(4_398_046_511_103, 4_398_046_511_104)  # the first character changes in 2109
def test_ids_sort_as_their_times_and_never_begin_with_a_dash(first: int, second: int) -> None:
    a, b = id_at(first), id_at(second)
    assert a[0] not in "-_"
    assert b[0] not in "-_"
    if first < second:
        assert a < b
    elif first > second:
        assert a > b


def test_new_ids_do_not_repeat() -> None:
    ids = {new_id() for _ in range(10_000)}
    assert len(ids) == 10_000


# Opening.


def test_store_is_public() -> None:
    assert jobtable.Store is Store


def test_open_a_path_gives_a_sqlite_store(tmp_path: Path) -> None:
    with Store.open(tmp_path / "app.db") as store:
        assert isinstance(store.engine, SQLiteEngine)
        store.engine.write(create)
        assert store.engine.read(get) is not None


def test_open_a_string_path(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "app.db")) as store:
        assert isinstance(store.engine, SQLiteEngine)
        assert store.engine.path == tmp_path / "app.db"


def test_open_a_relative_sqlite_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    with Store.open("sqlite:///data/app.db") as store:
        assert isinstance(store.engine, SQLiteEngine)
        assert store.engine.path == tmp_path / "data" / "app.db"


def test_open_an_absolute_sqlite_url(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/app.db") as store:
        assert isinstance(store.engine, SQLiteEngine)
        assert store.engine.path == tmp_path / "app.db"
    assert (tmp_path / "app.db").exists()


def test_open_passes_durable_to_the_engine(tmp_path: Path) -> None:
    with Store.open(tmp_path / "app.db", durable=False) as store:
        assert isinstance(store.engine, SQLiteEngine)
        assert store.engine.pragma("synchronous") == 1  # NORMAL


def test_open_an_unknown_url_scheme_is_a_store_error() -> None:
    with pytest.raises(StoreError, match=re.escape("mysql://db.example/app")):
        Store.open("mysql://db.example/app")


def test_open_something_that_is_not_a_path_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="want str or a path"):
        Store.open(42)  # type: ignore[arg-type]


def test_open_postgres_without_psycopg_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if importlib.util.find_spec("jobtable._engines.postgres.engine") is None:
        pytest.skip("the PostgreSQL engine is not written yet")
    # A None entry makes `import psycopg` fail as if it were not installed.
    monkeypatch.delitem(sys.modules, "jobtable._engines.postgres.engine", raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"install jobtable\[postgres\]") as raised:
        Store.open("postgresql://alice:s3cret@db.example/app")
    assert "s3cret" not in str(raised.value)


# Waking runners.


def test_an_enqueue_calls_each_watching_wake_until_it_stops(tmp_path: Path) -> None:
    calls: list[str] = []
    ping = jobtable.Kind("ping", int, int)
    with Store.open(tmp_path / "app.db") as store:
        stop_a = store._watch_enqueues(lambda: calls.append("a"))
        stop_b = store._watch_enqueues(lambda: calls.append("b"))
        ping.enqueue(store, 1)
        assert calls == ["a", "b"]
        stop_a()
        stop_a()  # stopping twice does nothing
        ping.enqueue_many(store, [2, 3])
        assert calls == ["a", "b", "b"]
        stop_b()
        ping.enqueue(store, 4)
        assert calls == ["a", "b", "b"]


# Closing and showing.


def test_leaving_the_with_block_closes_the_store(tmp_path: Path) -> None:
    with Store.open(tmp_path / "app.db") as store:
        pass
    with pytest.raises(StoreError, match="store is closed"):
        store.engine.read(get)


def test_close_twice_does_nothing(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "app.db")
    store.close()
    store.close()


def test_repr_names_the_engine_and_the_path(tmp_path: Path) -> None:
    with Store.open(tmp_path / "app.db") as store:
        text = repr(store)
    assert "SQLiteEngine" in text
    assert str(tmp_path / "app.db") in text


def test_redact_url_hides_the_password() -> None:
    shown = redact_url("postgresql://alice:s3cret@db.example:5432/app")
    assert shown == "postgresql://alice:***@db.example:5432/app"


def test_redact_url_hides_a_password_in_the_query() -> None:
    shown = redact_url("postgres://db.example/app?user=alice&password=s3cret&sslmode=require")
    assert "s3cret" not in shown
    assert shown == "postgres://db.example/app?user=alice&password=***&sslmode=require"


def test_redact_url_keeps_a_url_without_password() -> None:
    url = "postgresql://alice@db.example/app"
    assert redact_url(url) == url


def test_repr_of_a_postgres_store_hides_the_password(tmp_path: Path) -> None:
    # Any engine will do: what repr shows of the target is the point.
    engine = SQLiteEngine.open(tmp_path / "app.db")
    try:
        store = Store(engine, target="postgresql://alice:s3cret@db.example/app")
        assert "s3cret" not in repr(store)
        assert "alice:***@db.example/app" in repr(store)
    finally:
        engine.close()


async def test_aopen_opens_the_store_off_the_event_loop(store_target: str) -> None:
    kind = jobtable.Kind("opened", int, int)
    store = await jobtable.Store.aopen(store_target, max_payload_bytes=64)
    try:
        job_id = await kind.aenqueue(store, 1)
        assert (await store.aget(job_id)).status is jobtable.Status.QUEUED
        with pytest.raises(jobtable.PayloadError, match="over the limit of 64"):
            await jobtable.Kind("big", str, str).aenqueue(store, "x" * 100)
    finally:
        store.close()


async def test_aopen_of_a_dead_server_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="5999"):
        await jobtable.Store.aopen("postgresql://app:pw@127.0.0.1:5999/test")
