"""Copies the WAL back into the database file from a thread of its own, never in a commit.

SQLite's automatic checkpoint runs inside the commit that finds the WAL past
1000 pages, on the connection that commits: for jobtable, the writer, so
every claim and outcome queued behind that commit waits for the copy and
for the database file's fsync. Once readers keep the WAL from starting over
(a dashboard, listings, other worker processes), the WAL stays past 1000
pages and every commit runs one. Under a steady flow with pruning, that put
the enqueue-to-start p99 at 5 to 7 times its figure without pruning
(BENCHMARKS.md, "Soak").

So the writer connection turns the automatic checkpoint off, and each
writer's ``Checkpointer`` runs ``PRAGMA wal_checkpoint(PASSIVE)`` on a
connection of its own, in a daemon thread: once after a commit, then at most
once every ``INTERVAL`` seconds while commits go on, never while none come.
A passive checkpoint takes no write lock, so the writer commits while it
copies; it copies what no reader still needs, and the writer starts the WAL
over at its next transaction once every page is copied and no reader uses
it. A checkpoint that fails (another process's checkpoint holds the lock, a
disk error) is logged at debug level and tried after the next commit:
nothing depends on one. ``WalLimit`` stays the bound when readers never let
the WAL start over.
"""

import logging
import sqlite3
import threading
from pathlib import Path

from jobtable._engines.sqlite.file import connect

INTERVAL = 0.2
"""The least time, in seconds, between two checkpoints of one writer."""

_logger = logging.getLogger("jobtable.sqlite")


class Checkpointer:
    """The checkpoint thread of one writer; see the module's docstring.

    ``committed`` is cheap and safe from any thread; the thread and its
    connection start at the first call, so a store that never writes costs
    neither.
    """

    def __init__(self, path: Path, interval: float | None = None) -> None:
        """Checkpoints the database at path, at most once every interval seconds (INTERVAL)."""
        self._path = path
        self._interval = INTERVAL if interval is None else interval
        self._due = threading.Event()
        self._stop = threading.Event()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0
        """How many checkpoints ran without an error: a signal for tests."""

    def committed(self) -> None:
        """Tells the thread a commit landed, starting it the first time."""
        if self._thread is None:
            with self._start:
                if self._thread is None and not self._stop.is_set():
                    self._thread = threading.Thread(
                        target=self._run,
                        name=f"jobtable-sqlite-checkpoint {self._path.name}",
                        daemon=True,
                    )
                    self._thread.start()
        self._due.set()

    def close(self) -> None:
        """Stops the thread, letting a checkpoint under way finish; again does nothing."""
        with self._start:
            self._stop.set()
            self._due.set()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        try:
            conn = connect(self._path, create=False, busy_timeout=0)
        except sqlite3.Error as err:
            _logger.warning("checkpoints of %s stopped: cannot connect: %s", self._path, err)
            return
        try:
            while True:
                self._due.wait()
                if self._stop.is_set():
                    return
                self._due.clear()
                self._checkpoint(conn)
                if self._stop.wait(self._interval):
                    return
        finally:
            conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as err:
            _logger.debug("checkpoint of %s failed: %s", self._path, err)
        else:
            self.checkpoints += 1
