"""The SQLite writer's commits never checkpoint: a thread of their own does, off the writer.

A commit that checkpoints makes every claim and outcome queued behind it
wait for the copy and the database file's fsync, so the writer connection
turns SQLite's automatic checkpoint off and each store's ``Checkpointer``
copies the WAL back from its own connection. The database file's size tells
whether anything was copied: in WAL mode a new page reaches it only at a
checkpoint.
"""

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import jobtable
from jobtable._engines.sqlite import checkpointer

PAYLOADS = ["x" * 1024] * 100
"""One write: 100 jobs of a 1 KiB payload, some 300 KiB of WAL pages."""


async def noop(ctx: jobtable.JobContext[None], payload: str) -> None:
    pass


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("jobtable-sqlite-checkpoint")]


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_commits_leave_the_database_file_alone_until_the_thread_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One checkpoint after the first commit, then none for an hour: whatever
    # the writes below copy into the database file, their commits copied.
    monkeypatch.setattr(checkpointer, "INTERVAL", 3600.0)
    path = tmp_path / "jobs.db"
    store = jobtable.Store.open(path)
    try:
        kind = jobtable.Runner(store, name="writer").register("noop", noop)
        kind.enqueue("first")
        ckpt = store.engine._writer._checkpointer  # type: ignore[attr-defined]
        _wait_for(lambda: ckpt.checkpoints == 1, "the first checkpoint")
        size = os.stat(path).st_size
        for _ in range(60):
            kind.enqueue_many(PAYLOADS)
        # Far past SQLite's 1000-page automatic checkpoint.
        assert os.stat(f"{path}-wal").st_size > 3 * 1000 * 4096
        assert os.stat(path).st_size == size
        assert ckpt.checkpoints == 1
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 6001


def test_the_thread_copies_the_wal_back_while_the_writer_commits(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    store = jobtable.Store.open(path)
    try:
        kind = jobtable.Runner(store, name="writer").register("noop", noop)
        size = os.stat(path).st_size
        for _ in range(20):
            kind.enqueue_many(PAYLOADS)
        _wait_for(lambda: os.stat(path).st_size > size + 2_000_000, "pages copied back")
    finally:
        store.close()


def test_a_store_that_never_writes_starts_no_thread_and_close_stops_it(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    before = len(_threads())
    reader = jobtable.Store.open(path)
    try:
        reader.list_jobs()
        assert len(_threads()) == before
    finally:
        reader.close()
    store = jobtable.Store.open(path)
    jobtable.Runner(store, name="writer").register("noop", noop).enqueue("x")
    assert len(_threads()) == before + 1
    store.close()
    assert len(_threads()) == before
