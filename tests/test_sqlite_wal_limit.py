"""The SQLite writer keeps the -wal file under its limit however constant the readers are.

Readers that never all stop at once (here two connections in a relay, one
always inside a read transaction that reads the WAL, as dashboards and
worker processes' reads overlap) keep SQLite's automatic checkpoint from
ever starting the WAL over: without a limit the file grows with every
write. With one, the writer checkpoints and empties it once it passes the
limit, so the file stays within the limit and one write's pages; a
checkpoint that a reader makes wait is tried again once the file has grown
by the limit once more, so the file stays within twice that.
"""

import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import jobtable

LIMIT = 512 * 1024
"""The limit the tests set, in bytes."""
WRITES = 120
"""How many enqueue_many calls each test makes, 100 jobs of a 1 KiB payload each: a
write adds about 300 KiB of WAL pages, so some 70 times LIMIT in all."""


async def noop(ctx: jobtable.JobContext[None], payload: str) -> None:
    pass


def _relay(path: Path, stop: threading.Event, ready: threading.Event) -> None:
    """Keeps a read transaction open on path at every moment until stop, two in turn."""
    conns = [sqlite3.connect(path, isolation_level=None) for _ in range(2)]
    try:
        holding = None
        while not stop.is_set():
            for conn in conns:
                conn.execute("BEGIN")
                conn.execute("SELECT count(*) FROM jobs").fetchone()
                if holding is not None:
                    holding.execute("COMMIT")
                holding = conn
                ready.set()
        if holding is not None:
            holding.execute("COMMIT")
    finally:
        for conn in conns:
            conn.close()


@pytest.fixture
def readers(tmp_path: Path) -> Iterator[Path]:
    """A fresh database's path, with the relay of readers on it for the test's length."""
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=_relay, args=(path, stop, ready), daemon=True)
    thread.start()
    ready.wait(10)
    yield path
    stop.set()
    thread.join(10)


def largest_wal(path: Path, wal_limit: int | None) -> tuple[int, int]:
    """Makes WRITES writes on path; returns the largest -wal size seen after one,
    and the most one write added to it."""
    store = jobtable.Store.open(path, wal_limit=wal_limit)
    kind = jobtable.Runner(store, name="writer").register("noop", noop)
    payloads = ["x" * 1024] * 100
    largest = grown = size = 0
    try:
        for _ in range(WRITES):
            kind.enqueue_many(payloads)
            before, size = size, os.stat(f"{path}-wal").st_size
            largest, grown = max(largest, size), max(grown, size - before)
    finally:
        store.close()
    return largest, grown


def test_without_a_limit_constant_readers_let_the_wal_grow(readers: Path) -> None:
    largest, _ = largest_wal(readers, None)
    assert largest > 8 * LIMIT


def test_the_limit_keeps_the_wal_within_it_under_constant_readers(readers: Path) -> None:
    largest, grown = largest_wal(readers, LIMIT)
    # Within the limit and a write, or, when a reader made the checkpoint
    # wait (a loaded machine), twice that: it is tried again a limit later.
    assert largest <= 2 * (LIMIT + grown)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1"])
def test_a_bad_wal_limit_is_refused_naming_it(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="wal_limit"):
        jobtable.Store.open(tmp_path / "jobs.db", wal_limit=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "jobs.db").exists()
