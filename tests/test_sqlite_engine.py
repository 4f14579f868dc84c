"""The SQLite engine, on real database files."""

import asyncio
import contextlib
import functools
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, ParamSpec

import pytest

from jobtable._engine import JobRow, NewJob, Queries
from jobtable._errors import StoreError
from jobtable._sqlite import SQLiteEngine
from jobtable._sqlite_file import SCHEMA_VERSION
from jobtable._values import new_id, now

P = ParamSpec("P")

WAIT = 10.0  # seconds a test waits for an event before it fails; never a timing claim


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder (names relative to it) with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def create(job_id: str, kind: str = "thumbnail") -> Callable[[Queries], None]:
    def op(q: Queries) -> None:
        q.insert_jobs(kind=kind, jobs=[NewJob(job_id, "{}", now())], now=now())

    return op


def get(job_id: str) -> Callable[[Queries], JobRow | None]:
    def op(q: Queries) -> JobRow | None:
        return q.get_job(id=job_id)

    return op


def exists(engine: SQLiteEngine, job_id: str) -> bool:
    return engine.read(get(job_id)) is not None


def make_database(path: Path, *statements: str) -> None:
    """Writes a plain (rollback-journal) SQLite database with statements run in it."""
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def in_event_loop(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """Runs an async test in a fresh event loop (the suite has no asyncio plugin)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


@contextlib.contextmanager
def opened(path: Path, *, durable: bool = True, readers: int = 4) -> Iterator[SQLiteEngine]:
    engine = SQLiteEngine.open(path, durable=durable, readers=readers)
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[SQLiteEngine]:
    opened = SQLiteEngine.open(tmp_path / "app.db")
    yield opened
    opened.close()


class Gate:
    """A write op that holds the writer thread until released, so later writes queue up."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, q: Queries) -> None:
        self.entered.set()
        if not self.release.wait(WAIT):
            raise TimeoutError("the gate was never released")


async def queue_behind_gate(
    engine: SQLiteEngine, ops: list[Callable[[Queries], object]]
) -> list[object]:
    """Holds the writer, queues every op, then lets them run; returns results or exceptions.

    Every op is queued before the writer is released, so the writer finds
    them all waiting at once.
    """
    gate = Gate()
    gate_task = asyncio.create_task(engine.awrite(gate))
    assert await asyncio.to_thread(gate.entered.wait, WAIT)
    tasks = [asyncio.create_task(engine.awrite(op)) for op in ops]
    # One pass of the event loop runs each task up to its await, which is
    # after its op is on the writer's queue.
    await asyncio.sleep(0)
    gate.release.set()
    await gate_task
    return await asyncio.gather(*tasks, return_exceptions=True)


# Opening: what is refused, and left as it was.


def test_directory_is_refused_naming_it_and_left_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="is a directory") as raised:
        SQLiteEngine.open(folder)
    assert str(folder) in str(raised.value)
    assert snapshot(tmp_path) == before


def test_path_in_missing_folder_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "app.db"
    with pytest.raises(StoreError, match="does not exist") as raised:
        SQLiteEngine.open(path)
    assert str(path) in str(raised.value)
    assert list(tmp_path.iterdir()) == []


def test_file_that_is_not_sqlite_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("These are my notes, not a database.\n" * 10)
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="not a SQLite database") as raised:
        SQLiteEngine.open(path)
    assert str(path) in str(raised.value)
    assert snapshot(tmp_path) == before


def test_short_file_that_is_not_sqlite_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "tiny.db"
    path.write_bytes(b"SQLite format 3\x00")  # the magic alone, no full header
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="not a SQLite database"):
        SQLiteEngine.open(path)
    assert snapshot(tmp_path) == before


def test_newer_schema_version_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    make_database(
        path, "CREATE TABLE notes (body TEXT)", f"PRAGMA user_version = {SCHEMA_VERSION + 1}"
    )
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match="newer than this jobtable") as raised:
        SQLiteEngine.open(path)
    assert str(path) in str(raised.value)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("statement", "name"),
    [
        ("CREATE TABLE jobs (id INTEGER PRIMARY KEY, title TEXT)", "jobs"),
        ("CREATE TABLE runners (name TEXT)", "runners"),
    ],
)
def test_app_table_with_our_name_is_refused_and_left_unchanged(
    tmp_path: Path, statement: str, name: str
) -> None:
    path = tmp_path / "app.db"
    make_database(path, statement)
    before = snapshot(tmp_path)
    with pytest.raises(StoreError, match=f"table named {name} that jobtable did not create"):
        SQLiteEngine.open(path)
    assert snapshot(tmp_path) == before


def test_bad_arguments_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="readers"):
        SQLiteEngine.open(tmp_path / "app.db", readers=0)
    with pytest.raises(ValueError, match="busy_timeout"):
        SQLiteEngine.open(tmp_path / "app.db", busy_timeout=-1)
    assert list(tmp_path.iterdir()) == []


def test_memory_database_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="needs a database file"):
        SQLiteEngine.open(":memory:")


# Opening: what is created and kept.


def test_new_file_gets_the_schema_and_its_version(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    SQLiteEngine.open(path).close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        }
    finally:
        conn.close()
    assert {"jobs", "runners"} <= tables


def test_empty_file_gets_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    path.touch()
    with opened(path) as engine:
        engine.write(create("j1"))
        assert exists(engine, "j1")


def test_reopening_keeps_the_data(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with opened(path) as engine:
        engine.write(create("j1"))
    with opened(path) as engine:
        row = engine.read(get("j1"))
    assert row is not None
    assert row.kind == "thumbnail"
    assert row.status == "queued"


def test_reopening_a_current_database_does_not_write_to_it(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with opened(path) as engine:
        engine.write(create("j1"))
    before = snapshot(tmp_path)
    with opened(path):
        pass
    assert snapshot(tmp_path) == before


def test_app_tables_are_kept_and_ours_added(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    make_database(
        path,
        "CREATE TABLE photos (id TEXT PRIMARY KEY, title TEXT)",
        "INSERT INTO photos VALUES ('p1', 'Lake')",
    )
    with opened(path) as engine:
        engine.write(create("j1"))
        assert exists(engine, "j1")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT id, title FROM photos").fetchall() == [("p1", "Lake")]
    finally:
        conn.close()


def test_database_is_in_wal_mode(engine: SQLiteEngine) -> None:
    assert engine.pragma("journal_mode") == "wal"


def test_durable_store_syncs_fully(tmp_path: Path) -> None:
    with opened(tmp_path / "app.db", durable=True) as engine:
        assert engine.pragma("synchronous") == 2  # FULL


def test_non_durable_store_syncs_normally(tmp_path: Path) -> None:
    with opened(tmp_path / "app.db", durable=False) as engine:
        assert engine.pragma("synchronous") == 1  # NORMAL


# Writing.


def test_write_returns_the_result_of_its_op(engine: SQLiteEngine) -> None:
    engine.write(create("j1"))
    assert engine.write(get("j1")) is not None
    assert engine.write(get("unknown")) is None


def test_a_write_that_returned_is_visible_to_a_read(engine: SQLiteEngine) -> None:
    engine.write(create("j1"))
    assert exists(engine, "j1")


def test_writes_from_eight_threads_at_once_all_land(engine: SQLiteEngine) -> None:
    start = threading.Barrier(8, timeout=WAIT)
    ids = [[new_id() for _ in range(25)] for _ in range(8)]
    errors: list[BaseException] = []

    def writer(mine: list[str]) -> None:
        try:
            start.wait()
            for job_id in mine:
                engine.write(create(job_id))
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(mine,)) for mine in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert errors == []
    assert all(exists(engine, job_id) for mine in ids for job_id in mine)
    assert engine.commits <= 8 * 25


@in_event_loop
async def test_writes_waiting_together_commit_in_one_transaction(engine: SQLiteEngine) -> None:
    before = engine.commits
    results = await queue_behind_gate(engine, [create(f"j{n}") for n in range(100)])
    assert results == [None] * 100
    assert engine.commits - before == 2  # the gate's transaction, then all 100 in one
    assert all(exists(engine, f"j{n}") for n in range(100))


@in_event_loop
async def test_a_failing_op_in_a_batch_is_rolled_back_alone(engine: SQLiteEngine) -> None:
    boom = ValueError("not this one")

    def create_then_fail(q: Queries) -> None:
        q.insert_jobs(kind="thumbnail", jobs=[NewJob("bad", "{}", now())], now=now())
        raise boom

    before = engine.commits
    results = await queue_behind_gate(engine, [create("a"), create_then_fail, create("b")])
    assert results[0] is None
    assert results[1] is boom  # the very exception, unchanged
    assert results[2] is None
    assert engine.commits - before == 2  # one batch: the neighbours shared its commit
    assert exists(engine, "a")
    assert not exists(engine, "bad")
    assert exists(engine, "b")


@in_event_loop
async def test_a_driver_error_in_a_batch_is_a_store_error_for_its_op_alone(
    engine: SQLiteEngine,
) -> None:
    engine.write(create("taken"))
    results = await queue_behind_gate(engine, [create("a"), create("taken"), create("b")])
    assert results[0] is None
    error = results[1]
    assert isinstance(error, StoreError)
    assert isinstance(error.__cause__, sqlite3.IntegrityError)
    assert str(engine.path) in str(error)
    assert results[2] is None
    assert exists(engine, "a")
    assert exists(engine, "b")


def test_an_exception_from_a_write_op_reaches_the_caller_unchanged(engine: SQLiteEngine) -> None:
    class Oops(Exception):
        pass

    oops = Oops()

    def fail(q: Queries) -> None:
        q.insert_jobs(kind="thumbnail", jobs=[NewJob("j1", "{}", now())], now=now())
        raise oops

    with pytest.raises(Oops) as raised:
        engine.write(fail)
    assert raised.value is oops
    assert not exists(engine, "j1")


def test_a_driver_error_from_a_write_is_a_store_error_from_it(engine: SQLiteEngine) -> None:
    engine.write(create("j1"))
    with pytest.raises(StoreError, match="UNIQUE constraint failed") as raised:
        engine.write(create("j1"))
    assert isinstance(raised.value.__cause__, sqlite3.IntegrityError)


def test_write_from_inside_a_write_op_is_refused(engine: SQLiteEngine) -> None:
    def nested(q: Queries) -> None:
        engine.write(create("inner"))

    with pytest.raises(StoreError, match="inside a write operation"):
        engine.write(nested)


@in_event_loop
async def test_awrite_cancelled_before_its_turn_never_runs(engine: SQLiteEngine) -> None:
    gate = Gate()
    gate_task = asyncio.create_task(engine.awrite(gate))
    assert await asyncio.to_thread(gate.entered.wait, WAIT)
    waiting = asyncio.create_task(engine.awrite(create("never")))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.release.set()
    await gate_task
    assert not exists(engine, "never")


# Reading.


def test_a_read_cannot_write(engine: SQLiteEngine) -> None:
    with pytest.raises(StoreError, match="readonly"):
        engine.read(create("j1"))
    assert not exists(engine, "j1")


def test_reads_from_more_threads_than_readers_all_complete(tmp_path: Path) -> None:
    with opened(tmp_path / "app.db", readers=2) as engine:
        engine.write(create("j1"))
        start = threading.Barrier(8, timeout=WAIT)
        found: list[bool] = []

        def reader() -> None:
            start.wait()
            for _ in range(20):
                found.append(exists(engine, "j1"))

        threads = [threading.Thread(target=reader) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
    assert found == [True] * 160


def test_an_exception_from_a_read_op_reaches_the_caller_unchanged(engine: SQLiteEngine) -> None:
    oops = LookupError("mine")

    def fail(q: Queries) -> None:
        raise oops

    with pytest.raises(LookupError) as raised:
        engine.read(fail)
    assert raised.value is oops
    engine.write(create("j1"))
    assert exists(engine, "j1")  # the reader went back to the pool in working order


@in_event_loop
async def test_awrite_and_aread_work_from_asyncio(engine: SQLiteEngine) -> None:
    await engine.awrite(create("j1"))
    row = await engine.aread(get("j1"))
    assert row is not None
    assert row.id == "j1"


# Closing.


def test_close_finishes_the_writes_already_queued(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    engine = SQLiteEngine.open(path)

    async def queue_then_close() -> list[object]:
        gate = Gate()
        gate_task = asyncio.create_task(engine.awrite(gate))
        assert await asyncio.to_thread(gate.entered.wait, WAIT)
        tasks = [asyncio.create_task(engine.awrite(create(f"j{n}"))) for n in range(10)]
        await asyncio.sleep(0)
        closing = asyncio.create_task(asyncio.to_thread(engine.close))
        gate.release.set()
        await gate_task
        await closing
        return await asyncio.gather(*tasks, return_exceptions=True)

    assert asyncio.run(queue_then_close()) == [None] * 10
    with opened(path) as reopened:
        assert all(exists(reopened, f"j{n}") for n in range(10))


def test_close_twice_does_nothing(engine: SQLiteEngine) -> None:
    engine.close()
    engine.close()


def test_close_closes_every_connection(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with opened(path) as engine:
        engine.write(create("j1"))
        assert exists(engine, "j1")
        assert (tmp_path / "app.db-wal").exists()
    # The last connection to close checkpoints and removes the WAL files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_using_a_closed_engine_is_a_store_error(engine: SQLiteEngine) -> None:
    engine.close()
    with pytest.raises(StoreError, match="store is closed"):
        engine.write(create("j1"))
    with pytest.raises(StoreError, match="store is closed"):
        engine.read(get("j1"))
    with pytest.raises(StoreError, match="store is closed"):
        asyncio.run(engine.awrite(create("j1")))
    with pytest.raises(StoreError, match="store is closed"):
        asyncio.run(engine.aread(get("j1")))


# SQLite's lock bytes in the database file: other processes test the shared range.
_SHARED_FIRST = 0x40000002
_SHARED_SIZE = 510
_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, int(sys.argv[3]), int(sys.argv[2]))
except OSError:
    print("refused")
else:
    print("granted")
"""


def _exclusive_lock_from_another_process(path: Path) -> str:
    probe = [sys.executable, "-c", _PROBE, str(path), str(_SHARED_FIRST), str(_SHARED_SIZE)]
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()


def test_opening_a_second_store_on_a_file_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    # Closing any descriptor of a file drops every POSIX lock the process
    # holds on it; had open() read the file itself, the first store would
    # lose the shared lock that keeps other processes from deleting its WAL.
    path = tmp_path / "jobs.db"
    first = SQLiteEngine.open(path)
    try:
        first.read(lambda q: q.get_job(id="x"))
        assert _exclusive_lock_from_another_process(path) == "refused"
        second = SQLiteEngine.open(path)
        second.close()
        assert _exclusive_lock_from_another_process(path) == "refused"
    finally:
        first.close()
