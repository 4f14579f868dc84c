"""The SQLite writer waits for another connection's write lock by trying every millisecond.

SQLite's own busy handler would sleep up to 100 ms between tries; the
writer's connection keeps a 1 ms busy timeout and ``begin_immediate`` tries
again until the store's busy_timeout has passed. These tests hold the lock
from another connection, as another process's transaction does.
"""

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import jobtable
from jobtable._engines.sqlite.write_lock import POLL_MS, begin_immediate


async def noop(ctx: jobtable.JobContext[None], payload: int) -> None:
    pass


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    return path


def _hold(path: Path, seconds: float, held: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _holding(path: Path, seconds: float) -> Iterator[threading.Thread]:
    held = threading.Event()
    thread = threading.Thread(target=_hold, args=(path, seconds, held), daemon=True)
    thread.start()
    assert held.wait(10)
    yield thread
    thread.join(10)


def test_the_writer_connection_tries_again_after_its_own_short_busy_timeout(path: Path) -> None:
    store = jobtable.Store.open(path)
    try:
        conn = store.engine._writer.connection  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == POLL_MS
    finally:
        store.close()


def test_a_write_waits_for_a_lock_held_far_longer_than_one_try(path: Path) -> None:
    store = jobtable.Store.open(path, busy_timeout=10.0)
    try:
        kind = jobtable.Runner(store, name="w").register("noop", noop)
        for _ in _holding(path, 0.3):
            job_id = kind.enqueue(1)
        assert [job.id for job in store.list_jobs()] == [job_id]
    finally:
        store.close()


def test_a_write_gives_up_once_busy_timeout_passed_and_stores_nothing(path: Path) -> None:
    store = jobtable.Store.open(path, busy_timeout=0.2)
    try:
        kind = jobtable.Runner(store, name="w").register("noop", noop)
        for _ in _holding(path, 1.5):
            began = time.monotonic()
            with pytest.raises(jobtable.StoreError, match="busy_timeout") as caught:
                kind.enqueue(1)
            waited = time.monotonic() - began
            assert caught.value.transient
        assert waited < 1.4, "it waited for the lock's release, not for busy_timeout"
        assert store.list_jobs() == []
    finally:
        store.close()


def test_with_no_busy_timeout_a_write_gives_up_at_the_first_refusal(path: Path) -> None:
    store = jobtable.Store.open(path, busy_timeout=0)
    try:
        kind = jobtable.Runner(store, name="w").register("noop", noop)
        for _ in _holding(path, 1.0):
            with pytest.raises(jobtable.StoreError, match="locked"):
                kind.enqueue(1)
    finally:
        store.close()


def test_an_error_other_than_busy_is_raised_at_once(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    try:
        conn.execute("BEGIN")
        with pytest.raises(sqlite3.OperationalError, match="within a transaction"):
            begin_immediate(conn, 5.0)
    finally:
        conn.close()
