"""What only the SQLite engine does, on real database files.

What every engine does is in the conformance suite (conformance/): this file holds
SQLite's own rules for opening a file, its writer thread and shared
transactions, its reader pool, its WAL and its locks.
"""

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
from seam import create, exists, now

from jobtable._engines.base import Queries
from jobtable._engines.rows import NewJob
from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._errors import StoreError

P = ParamSpec("P")

WAIT = 10.0  # seconds a test waits for an event before it fails; never a timing claim


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder (names relative to it) with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def create_then_raise(err: BaseException) -> Callable[[Queries], None]:
    """An op that stores the job "bad", then raises err: its write must be rolled back."""

    def op(q: Queries) -> None:
        q.insert_jobs(kind="thumbnail", jobs=[NewJob("bad", "{}", now())], now=now())
        raise err

    return op


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


def test_empty_file_gets_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    path.touch()
    with opened(path) as engine:
        engine.write(create("j1"))
        assert exists(engine, "j1")


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


def _open_together(path: Path, threads: int) -> list[SQLiteEngine | BaseException]:
    """Opens path from threads threads released at once; returns each one's outcome."""
    start = threading.Barrier(threads)
    outcomes: list[SQLiteEngine | BaseException] = []

    def open_engine() -> None:
        start.wait(10)
        try:
            outcomes.append(SQLiteEngine.open(path))
        except BaseException as err:
            outcomes.append(err)

    workers = [threading.Thread(target=open_engine) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return outcomes


def test_many_first_opens_of_new_files_all_succeed(tmp_path: Path) -> None:
    # Threads opening one new file together race for the schema and for the
    # switch to WAL mode: none of them may take another's fresh schema for an
    # app's table, or give up on the journal-mode lock.
    for round_ in range(30):
        outcomes = _open_together(tmp_path / f"jobs{round_}.db", 4)
        engines = [o for o in outcomes if isinstance(o, SQLiteEngine)]
        for engine in engines:
            engine.close()
        assert len(engines) == 4, (round_, outcomes)


def test_database_is_in_wal_mode(engine: SQLiteEngine) -> None:
    assert engine.pragma("journal_mode") == "wal"


def test_durable_store_syncs_fully(tmp_path: Path) -> None:
    with opened(tmp_path / "app.db", durable=True) as engine:
        assert engine.pragma("synchronous") == 2  # FULL


def test_non_durable_store_syncs_normally(tmp_path: Path) -> None:
    with opened(tmp_path / "app.db", durable=False) as engine:
        assert engine.pragma("synchronous") == 1  # NORMAL


# Writing.


def wait_for_queued(engine: SQLiteEngine, count: int) -> None:
    """Waits until count writes wait for the writer (a look at the engine's queue)."""
    for _ in range(int(WAIT * 1000)):
        if engine._writer.pending >= count:
            return
        threading.Event().wait(0.001)
    raise TimeoutError(f"{engine._writer.pending} writes queued, want {count}")


class Leader:
    """A synchronous write, in a thread of its own, that holds the writer until released."""

    def __init__(self, engine: SQLiteEngine, op: Callable[[Queries], object] | None = None) -> None:
        self.gate = Gate()
        self.op = op
        self.raised: BaseException | None = None
        self.ran_in: threading.Thread | None = None

        def hold(q: Queries) -> object:
            self.ran_in = threading.current_thread()
            self.gate(q)
            return None if self.op is None else self.op(q)

        def lead() -> None:
            try:
                engine.write(hold)
            except BaseException as err:
                self.raised = err

        self.thread = threading.Thread(target=lead)
        self.thread.start()
        assert self.gate.entered.wait(WAIT)

    def finish(self) -> None:
        self.gate.release.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


def start_writers(
    engine: SQLiteEngine, ops: list[Callable[[Queries], object]]
) -> Callable[[], list[object]]:
    """Starts a thread per op calling engine.write.

    Returns the function that joins them and gives each one's result or exception.
    """
    results: list[object] = [None] * len(ops)

    def write(i: int) -> None:
        try:
            results[i] = engine.write(ops[i])
        except BaseException as err:
            results[i] = err

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(ops))]
    for thread in threads:
        thread.start()

    def join() -> list[object]:
        for thread in threads:
            thread.join(WAIT)
        assert not any(thread.is_alive() for thread in threads)
        return results

    return join


def test_a_write_that_finds_the_writer_idle_runs_in_the_calling_thread(
    engine: SQLiteEngine,
) -> None:
    ran_in: list[threading.Thread] = []

    def op(q: Queries) -> None:
        ran_in.append(threading.current_thread())
        q.insert_jobs(kind="thumbnail", jobs=[NewJob("j1", "{}", now())], now=now())

    engine.write(op)
    assert ran_in == [threading.current_thread()]  # no hop to the writer thread and back
    assert exists(engine, "j1")


def test_writes_from_many_threads_behind_a_leader_all_commit_in_one_transaction(
    engine: SQLiteEngine,
) -> None:
    before = engine.commits
    leader = Leader(engine)
    join = start_writers(engine, [create(f"j{n}") for n in range(31)])
    wait_for_queued(engine, 31)
    leader.finish()
    assert join() == [None] * 31
    assert leader.raised is None
    assert leader.ran_in is leader.thread
    assert engine.commits - before == 2  # the leader's, then the 31 queued behind it in one
    assert all(exists(engine, f"j{n}") for n in range(31))


def test_a_failing_leader_does_not_lose_the_writes_queued_behind_it(
    engine: SQLiteEngine,
) -> None:
    boom = ValueError("the leader's own failure")
    leader = Leader(engine, create_then_raise(boom))
    join = start_writers(engine, [create(f"j{n}") for n in range(5)])
    wait_for_queued(engine, 5)
    leader.finish()
    assert leader.raised is boom
    assert join() == [None] * 5
    assert not exists(engine, "bad")
    assert all(exists(engine, f"j{n}") for n in range(5))
    engine.write(create("after"))  # the writer went idle in working order
    assert exists(engine, "after")


def test_a_failing_write_among_those_queued_behind_a_leader_is_rolled_back_alone(
    engine: SQLiteEngine,
) -> None:
    boom = ValueError("not this one")
    leader = Leader(engine)
    join = start_writers(engine, [create("a"), create_then_raise(boom), create("b")])
    wait_for_queued(engine, 3)
    before = engine.commits
    leader.finish()
    assert join() == [None, boom, None]
    assert engine.commits - before == 2  # the leader's, then the three in one
    assert exists(engine, "a")
    assert exists(engine, "b")
    assert not exists(engine, "bad")


def test_close_waits_for_a_write_under_way_in_another_thread(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    engine = SQLiteEngine.open(path)
    leader = Leader(engine, create("j1"))
    closing = threading.Thread(target=engine.close)
    closing.start()
    for _ in range(int(WAIT * 1000)):  # until close has begun: it refuses new writes
        if engine._writer.closed:
            break
        threading.Event().wait(0.001)
    assert closing.is_alive()  # it waits for the leader
    leader.finish()
    closing.join(WAIT)
    assert not closing.is_alive()
    assert leader.raised is None
    with pytest.raises(StoreError, match="closed"):
        engine.write(create("j2"))
    with opened(path) as reopened:
        assert exists(reopened, "j1")


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


def test_close_closes_every_connection(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with opened(path) as engine:
        engine.write(create("j1"))
        assert exists(engine, "j1")
        assert (tmp_path / "app.db-wal").exists()
    # The last connection to close checkpoints and removes the WAL files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


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


@pytest.mark.slow
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
