"""Takes a SQLite file's write lock by trying every millisecond, not by SQLite's backoff.

SQLite's busy handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 and
then 100 ms between its tries, so a write that found the lock taken a few
times in a row sleeps 25 to 100 ms at a time while other processes' short
writes come and go. With 3 worker processes and an enqueuing one on one
file, no transaction held the lock more than 22 ms, yet a writer's wait
for it reached p99 19 ms, p99.9 82 to 230 ms and 730 ms at worst
(BENCHMARKS.md, "Soak").

So the writer connection's own busy timeout is ``POLL_MS``: SQLite tries,
sleeps once for that long and tries again, then answers SQLITE_BUSY, and
``begin_immediate`` goes on trying until the store's busy_timeout has
passed. A waiting writer then starts within about a millisecond of the lock's
release; a try that fails costs a system call. Statements that wait for
readers rather than writers (the WAL limit's checkpoint) wait under
``waiting``, with the whole busy_timeout.
"""

import contextlib
import sqlite3
import time
from collections.abc import Iterator

POLL_MS = 1
"""The writer connection's busy timeout, in milliseconds: the pause between two tries."""

_execute = sqlite3.Connection.execute


def _busy(err: sqlite3.OperationalError) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_BUSY


def begin_immediate(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Begins a write transaction on conn, trying for up to busy_timeout seconds.

    Raises the last SQLITE_BUSY error once busy_timeout has passed, and any
    other error at once.
    """
    deadline = 0.0
    while True:
        try:
            _execute(conn, "BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as err:
            if not _busy(err):
                raise
            now = time.monotonic()
            if not deadline:
                deadline = now + busy_timeout
            if now >= deadline:
                raise


def poll_pragma(busy_timeout: float) -> str:
    """The PRAGMA that gives a writer connection its busy timeout: POLL_MS, or 0 with none."""
    return f"PRAGMA busy_timeout = {POLL_MS if busy_timeout > 0 else 0:d}"


@contextlib.contextmanager
def waiting(conn: sqlite3.Connection, busy_timeout: float) -> Iterator[None]:
    """Gives conn SQLite's busy handler for busy_timeout seconds inside, POLL_MS after."""
    _execute(conn, f"PRAGMA busy_timeout = {int(busy_timeout * 1000):d}")
    try:
        yield
    finally:
        _execute(conn, poll_pragma(busy_timeout))
