"""What every engine must do: one suite, run on each engine (a SQLite file, a PostgreSQL schema).

Each test takes ``kit`` or ``opened`` (conftest.py) and so runs once per
engine of engine_params's ``ENGINES``, and through PgBouncer in both modes; it
names the seam methods it covers with ``covers``, and the files beside this
one cover the other queries by area. A new engine passes this suite before the runner may
use it. What only one engine has (SQLite's writer thread, locks and WAL;
PostgreSQL's pool, LISTEN and server) is tested beside it, in
test_sqlite_engine.py and test_postgres_engine.py.

Nothing here sleeps to wait: background work is awaited on events with a
generous limit, which only a broken engine reaches.
"""

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest
from seam import claim, claim_rows, create, enqueue, exists, get, new_id, now

from conformance.engine_kits import LIMIT, Kit, covers, in_threads
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import NewJob
from jobtable._errors import StoreError

# Opening.


@covers("write")
def test_open_creates_the_schema_and_records_its_version(opened: Engine, kit: Kit) -> None:
    assert kit.version() == kit.current_version
    opened.write(create("j1"))
    assert exists(opened, "j1")


def test_concurrent_first_opens_apply_the_schema_once(kit: Kit) -> None:
    start = threading.Barrier(4)
    outcomes: list[BaseException | Engine] = []

    def open_engine() -> None:
        start.wait(LIMIT)
        try:
            outcomes.append(kit.open())
        except BaseException as err:
            outcomes.append(err)

    in_threads(lambda _: open_engine(), list(range(4)))
    engines = [o for o in outcomes if not isinstance(o, BaseException)]
    try:
        assert len(engines) == 4, outcomes
        engines[0].write(create("j1"))
        assert all(exists(engine, "j1") for engine in engines)
    finally:
        for engine in engines:
            engine.close()
    assert kit.version() == kit.current_version


def test_reopening_keeps_the_jobs(kit: Kit) -> None:
    first = kit.open()
    first.write(create("j1", "thumbnail"))
    first.close()
    second = kit.open()
    try:
        row = second.read(get("j1"))
    finally:
        second.close()
    assert row is not None
    assert (row.id, row.kind, row.status) == ("j1", "thumbnail", "queued")


def test_newer_schema_version_is_refused_and_left_unchanged(kit: Kit) -> None:
    first = kit.open()
    first.write(create("j1"))
    first.close()
    kit.set_version(kit.current_version + 1)
    before = kit.stored()

    with pytest.raises(StoreError, match="newer than this jobtable"):
        kit.open()

    assert kit.stored() == before
    assert kit.version() == kit.current_version + 1


# Writing and reading.


@covers("write")
def test_write_returns_the_result_of_its_op(opened: Engine) -> None:
    opened.write(create("j1"))
    row = opened.write(get("j1"))
    assert row is not None
    assert row.id == "j1"
    assert opened.write(get("unknown")) is None


def test_a_write_that_returned_is_visible_to_a_read(opened: Engine) -> None:
    opened.write(create("j1"))
    assert exists(opened, "j1")


def test_writes_from_eight_threads_at_once_all_land(kit: Kit) -> None:
    engine = kit.open_wide(8)
    try:
        start = threading.Barrier(8, timeout=LIMIT)
        ids = [[new_id() for _ in range(25)] for _ in range(8)]
        errors: list[BaseException] = []

        def writer(mine: list[str]) -> None:
            try:
                start.wait()
                for job_id in mine:
                    engine.write(create(job_id))
            except BaseException as err:
                errors.append(err)

        in_threads(writer, ids)
        assert errors == []
        assert all(exists(engine, job_id) for mine in ids for job_id in mine)
    finally:
        engine.close()


def test_an_exception_from_a_write_op_rolls_back_and_reaches_the_caller_unchanged(
    opened: Engine,
) -> None:
    class Oops(Exception):
        pass

    oops = Oops("op failed")

    def create_then_raise(q: Queries) -> None:
        q.insert_jobs(kind="k", jobs=[NewJob("j1", "{}", now())], now=now())
        raise oops

    with pytest.raises(Oops) as raised:
        opened.write(create_then_raise)
    assert raised.value is oops
    assert not exists(opened, "j1")


def test_a_driver_error_from_a_write_is_a_store_error_from_it(opened: Engine, kit: Kit) -> None:
    cause, message = kit.duplicate
    opened.write(create("j1"))
    with pytest.raises(StoreError, match=message) as raised:
        opened.write(create("j1"))
    assert isinstance(raised.value.__cause__, cause)
    opened.write(create("j2"))
    assert exists(opened, "j2")  # the engine works on after the error


@covers("read")
def test_an_exception_from_a_read_op_reaches_the_caller_unchanged(opened: Engine) -> None:
    oops = LookupError("mine")

    def fail(q: Queries) -> None:
        raise oops

    with pytest.raises(LookupError) as raised:
        opened.read(fail)
    assert raised.value is oops
    opened.write(create("j1"))
    assert exists(opened, "j1")  # the connection went back in working order


@covers("awrite", "aread")
async def test_async_fronts_run_the_same_operations(opened: Engine) -> None:
    await opened.awrite(create("j1"))
    row = await opened.aread(get("j1"))
    assert row is not None
    assert (row.id, row.status) == ("j1", "queued")


async def test_async_fronts_do_not_block_the_event_loop(opened: Engine) -> None:
    held = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    def hold(_: Queries) -> None:
        loop.call_soon_threadsafe(held.set)
        release.wait(LIMIT)

    write = asyncio.create_task(opened.awrite(hold))
    try:
        # The event loop runs on while the op is held: it sees the op start.
        await asyncio.wait_for(held.wait(), LIMIT)
    finally:
        release.set()
    await write


@covers("insert_jobs", "get_job_record")
def test_times_go_in_as_utc_text_and_come_out_as_aware_datetimes(opened: Engine) -> None:
    text = "2024-02-29T23:59:58.123456Z"
    opened.write(lambda q: q.insert_jobs(kind="k", jobs=[NewJob("a", "{}", text)], now=text))
    record = opened.read(lambda q: q.get_job_record(id="a"))
    assert record is not None
    stored = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    assert (record.run_at, record.created_at) == (stored, stored)
    assert record.run_at.utcoffset() == timedelta(0)


# Claiming and finishing.


def test_claim_takes_the_oldest_jobs_first(opened: Engine) -> None:
    enqueue(opened, "c", "a", "b")
    assert claim(opened, 2) == ["c", "a"]
    assert claim(opened, 2) == ["b"]
    assert claim(opened, 2) == []


def test_claim_marks_jobs_running_for_the_runner_with_a_new_attempt(opened: Engine) -> None:
    enqueue(opened, "a")
    rows = opened.write(lambda q: claim_rows(q, 1, "r1"))
    assert [(row.id, row.kind, row.payload, row.attempt) for row in rows] == [("a", "k", "{}", 1)]
    job = opened.read(get("a"))
    assert job is not None
    assert job.status == "running"


def test_concurrent_claims_never_give_a_job_twice(kit: Kit) -> None:
    engine = kit.open_wide(8)
    try:
        ids = [f"job{n:03}" for n in range(200)]

        def create_all(q: Queries) -> None:
            for job_id in ids:
                q.insert_jobs(kind="k", jobs=[NewJob(job_id, "{}", now())], now=now())

        engine.write(create_all)
        start = threading.Barrier(8)
        claimed: list[list[str]] = [[] for _ in range(8)]

        def work(mine: list[str]) -> None:
            start.wait(LIMIT)
            while batch := claim(engine, 3):
                mine.extend(batch)

        in_threads(work, claimed)
        assert sorted(job_id for mine in claimed for job_id in mine) == ids
    finally:
        engine.close()


@covers("publish_job_result", "succeed_job", "fail_job")
def test_writes_of_a_stale_attempt_change_nothing(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1)
    stale = 0

    def write_stale(q: Queries) -> list[int]:
        return [
            q.publish_job_result(result='"stale"', now=now(), id="a", attempt=stale),
            q.succeed_job(result='"stale"', now=now(), id="a", attempt=stale, run_trace=None),
            q.fail_job(error="stale", now=now(), id="a", attempt=stale, run_trace=None),
        ]

    assert opened.write(write_stale) == [0, 0, 0]
    job = opened.read(get("a"))
    assert job is not None
    assert (job.status, job.result, job.error) == ("running", None, None)


def test_writes_of_the_current_attempt_are_stored(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1)
    published = opened.write(
        lambda q: q.publish_job_result(result='{"done": 1}', now=now(), id="a", attempt=1)
    )
    partial = opened.read(get("a"))
    succeeded = opened.write(
        lambda q: q.succeed_job(result="[2]", now=now(), id="a", attempt=1, run_trace=None)
    )
    final = opened.read(get("a"))
    assert (published, succeeded) == (1, 1)
    assert partial is not None
    assert (partial.status, partial.result) == ("running", '{"done": 1}')
    assert final is not None
    assert (final.status, final.result, final.error) == ("succeeded", "[2]", None)


# Closing.


@covers("close")
def test_close_twice_does_nothing(kit: Kit) -> None:
    engine = kit.open()
    engine.write(create("j1"))
    engine.close()
    engine.close()
    reopened = kit.open()
    try:
        assert exists(reopened, "j1")
    finally:
        reopened.close()


def test_using_a_closed_engine_is_a_store_error(opened: Engine) -> None:
    opened.close()
    with pytest.raises(StoreError, match="store is closed"):
        opened.write(create("j1"))
    with pytest.raises(StoreError, match="store is closed"):
        opened.read(get("j1"))
    with pytest.raises(StoreError, match="store is closed"):
        asyncio.run(opened.awrite(create("j1")))
    with pytest.raises(StoreError, match="store is closed"):
        asyncio.run(opened.aread(get("j1")))


def test_the_kit_names_the_engine_it_opens(opened: Engine, kit: Kit) -> None:
    # A guard on the suite itself: each parametrized run really opens its engine.
    expected = {"sqlite": "SQLiteEngine", "postgres": "PostgresEngine"}[kit.name]
    assert type(opened).__name__ == expected
