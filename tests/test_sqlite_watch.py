"""SQLite's cross-process wake-up: another process's enqueue wakes a runner through inotify.

Runners here poll once an hour, so only the watcher can start a job that
another process enqueued. The other process is a real one (``ENQUEUER``
below), writing the same file.
"""

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.rows import NewJob
from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._engines.sqlite.watch import WalWatcher
from jobtable._values import now

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

LIMIT = 10.0
"""Seconds a woken job may take to start: generous, the machine is shared."""

HOUR = 3600.0

# Reads commands from stdin, one a line, and answers each with a line:
# "enqueue" enqueues a ping job and prints its id; "checkpoint" runs
# wal_checkpoint(TRUNCATE) and prints the WAL's size after it.
ENQUEUER = """
import os, sqlite3, sys
import jobtable

path = sys.argv[1]
store = jobtable.Store.open(path)
runner = jobtable.Runner(store, name="web")


def ping(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


kind = runner.register("ping", ping)
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "enqueue":
        print(kind.enqueue(1), flush=True)
    elif line.strip() == "checkpoint":
        conn = sqlite3.connect(path, isolation_level=None)
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        conn.close()
        print(f"{busy} {os.path.getsize(path + '-wal')}", flush=True)
store.close()
"""


class Enqueuer:
    """Another process on the same database file, enqueuing on command."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ENQUEUER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.ask(None) == "ready"

    def ask(self, command: str | None) -> str:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        if command is not None:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    async def aask(self, command: str) -> str:
        return await asyncio.to_thread(self.ask, command)

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "jobs.db"


@pytest.fixture
def enqueuer(path: Path) -> Iterator[Enqueuer]:
    jobtable.Store.open(path).close()  # the schema, before two processes race to create it
    other = Enqueuer(path)
    yield other
    other.close()


class Pings:
    """A runner polling hourly (or every poll_interval), with the ping kind, and the ids it ran."""

    def __init__(self, store: jobtable.Store, poll_interval: float = HOUR) -> None:
        self.runner = jobtable.Runner(store, name="worker", poll_interval=poll_interval)
        self.started: set[str] = set()
        self._changed = asyncio.Event()
        self.runner.register("ping", self._ping)

    async def _ping(self, ctx: jobtable.JobContext[int], payload: int) -> int:
        self.started.add(ctx.id)
        self._changed.set()
        return payload

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["Pings"]:
        """Runs the runner inside the block; stops and waits for it after."""
        await self.runner.start()
        try:
            yield self
        finally:
            self.runner.stop()
            await self.runner.wait()

    async def wait_started(self, job_id: str) -> None:
        async with asyncio.timeout(LIMIT):
            while job_id not in self.started:
                self._changed.clear()
                await self._changed.wait()


def _fd_targets() -> dict[int, str]:
    """What each open descriptor of this process refers to."""
    targets: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            targets[int(name)] = os.readlink(Path("/proc/self/fd") / name)
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
    return targets


def _inotify_fds() -> set[int]:
    return {fd for fd, target in _fd_targets().items() if target == "anon_inode:inotify"}


def _fds_of(path: Path) -> int:
    return sum(1 for target in _fd_targets().values() if target == str(path))


def _create(job_id: str) -> Callable[[Queries], None]:
    def op(q: Queries) -> None:
        q.insert_jobs(kind="ping", jobs=[NewJob(job_id, "1", now())], now=now())

    return op


def _watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("jobtable-sqlite-watch")]


@pytest.mark.slow
async def test_a_job_from_another_process_starts_without_waiting_for_the_poll(
    path: Path, enqueuer: Enqueuer
) -> None:
    with jobtable.Store.open(path) as store:
        async with Pings(store).running() as pings:
            for _ in range(3):
                await pings.wait_started(await enqueuer.aask("enqueue"))


@pytest.mark.slow
async def test_the_watch_survives_a_checkpoint_that_truncates_the_wal(
    path: Path, enqueuer: Enqueuer
) -> None:
    with jobtable.Store.open(path) as store:
        async with Pings(store).running() as pings:
            await pings.wait_started(await enqueuer.aask("enqueue"))
            for _ in range(2):
                # The checkpoint waits (busy timeout) for the runner's
                # transactions, then truncates the WAL to nothing.
                assert await enqueuer.aask("checkpoint") == "0 0"
                await pings.wait_started(await enqueuer.aask("enqueue"))


def test_unlisten_stops_the_thread_and_closes_the_watch(path: Path) -> None:
    engine = SQLiteEngine.open(path)
    try:
        before_fds, before_threads = _inotify_fds(), len(_watch_threads())
        unlisten = engine.listen(lambda: None)
        assert unlisten is not None
        assert len(_inotify_fds() - before_fds) == 1
        assert len(_watch_threads()) == before_threads + 1
        unlisten()
        assert _inotify_fds() == before_fds
        assert len(_watch_threads()) == before_threads
        unlisten()  # again: nothing
    finally:
        engine.close()


def test_close_stops_every_listener(path: Path) -> None:
    engine = SQLiteEngine.open(path)
    before_fds, before_threads = _inotify_fds(), len(_watch_threads())
    try:
        assert engine.listen(lambda: None) is not None
        assert engine.listen(lambda: None) is not None
        assert len(_watch_threads()) == before_threads + 2
    finally:
        engine.close()
    assert _inotify_fds() == before_fds
    assert len(_watch_threads()) == before_threads
    with pytest.raises(jobtable.StoreError, match="store is closed"):
        engine.listen(lambda: None)


# SQLite's lock bytes in the database file: another process tests the shared range.
_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002)
except OSError:
    print("refused")
else:
    print("granted")
"""


@pytest.mark.slow
def test_listening_neither_opens_the_database_nor_drops_its_locks(path: Path) -> None:
    # Closing any descriptor of a file drops every POSIX lock the process
    # holds on it: the watch must hold none of the database's.
    engine = SQLiteEngine.open(path)
    probe = [sys.executable, "-c", _PROBE, str(path)]
    try:
        engine.read(lambda q: q.get_job(id="x"))
        descriptors = _fds_of(path)
        unlisten = engine.listen(lambda: None)
        assert unlisten is not None
        assert _fds_of(path) == descriptors
        unlisten()
        assert subprocess.run(probe, capture_output=True, text=True).stdout.strip() == "refused"
    finally:
        engine.close()


def test_another_connections_commit_wakes_and_a_raising_wake_is_logged(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jobtable.Store.open(path).close()
    woken = threading.Semaphore(0)
    calls = 0

    def wake() -> None:
        nonlocal calls
        calls += 1
        woken.release()
        if calls == 1:
            raise RuntimeError("wake broke")

    other = SQLiteEngine.open(path)  # opened first: opening creates the WAL, which wakes
    other.read(lambda q: q.get_job(id="x"))
    watcher = WalWatcher.start(path, wake)
    assert watcher is not None
    try:
        for n in range(2):
            other.write(_create(f"j{n}"))
            assert woken.acquire(timeout=LIMIT)
        assert "wake raised" in caplog.text
    finally:
        watcher.stop()
        other.close()
    assert not watcher.running
    assert watcher.fileno == -1


def test_the_watch_sees_a_wal_deleted_and_created_again(path: Path) -> None:
    woken = threading.Semaphore(0)
    watcher = WalWatcher.start(path, woken.release)
    assert watcher is not None
    try:
        for n in range(2):
            with jobtable.Store.open(path) as store:
                while woken.acquire(timeout=0.2):
                    pass  # the wakes of opening it
                store.engine.write(_create(f"j{n}"))
                assert woken.acquire(timeout=LIMIT)
            # The last connection to close removes the WAL.
            assert not path.with_name(path.name + "-wal").exists()
    finally:
        watcher.stop()


def test_a_folder_that_cannot_be_watched_falls_back_to_polling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = _inotify_fds()
    with caplog.at_level(logging.WARNING, logger="jobtable.sqlite"):
        assert WalWatcher.start(tmp_path / "missing" / "jobs.db", lambda: None) is None
    assert "polling only" in caplog.text
    assert "missing" in caplog.text
    assert _inotify_fds() == before


def test_a_moved_folder_ends_the_watch_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    watcher = WalWatcher.start(folder / "jobs.db", lambda: None)
    assert watcher is not None
    with caplog.at_level(logging.WARNING, logger="jobtable.sqlite"):
        folder.rename(tmp_path / "moved")
        deadline = time.monotonic() + LIMIT
        while watcher.running and time.monotonic() < deadline:
            time.sleep(0.01)
    assert not watcher.running
    assert "the watch ended" in caplog.text
    watcher.stop()
    assert watcher.fileno == -1


@pytest.mark.slow
async def test_without_watch_the_runner_finds_other_processes_jobs_by_polling(
    path: Path, enqueuer: Enqueuer
) -> None:
    engine = SQLiteEngine.open(path, watch=False)
    assert engine.listen(lambda: None) is None
    before = len(_watch_threads())
    with jobtable.Store(engine, target=str(path)) as store:
        # Given at construction: the producer takes it then, not from the attribute later.
        pings = Pings(store, poll_interval=0.05)
        async with pings.running():
            assert len(_watch_threads()) == before
            await pings.wait_started(await enqueuer.aask("enqueue"))
