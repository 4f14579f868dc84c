"""Turns at the write lock for the processes that share one SQLite file.

SQLite's write lock is taken by polling: a writer that finds it held sleeps
(1, 2, 5, 10 ... 100 ms: SQLite's busy handler) and looks again. Between
processes the lock then goes to whoever asks right after a commit, most
often the process that just committed, while the others sleep on, longer
at each miss: several worker processes on one file ran no faster than one,
and with four a writer waited out its whole busy_timeout. So before it
begins a transaction, the writer of each process takes its turn on an
``flock`` of an empty file beside the database (``<database>-turn``): a
process waiting for its turn waits in the kernel and is woken as the turn
is released.

The turn only orders jobtable's writers: SQLite's own lock still guards the
file, so a writer that does not take turns (another program, an
application's transaction on its own connection) stays correct, and waits
as before. The wait for a turn has no timeout: a turn is held for one
transaction of jobtable's own statements, and a process that dies releases
it. Where the turn file cannot be made (a folder that refuses it, no
``fcntl``), writes go on without turns.
"""

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no turns
    fcntl = None  # type: ignore[assignment]


class Turns:
    """This process's place in the turns at one SQLite file's write lock.

    ``turn`` is a context whose block runs in the turn. One thread at a
    time takes it in a process: the store's one writer.
    """

    def __init__(self, path: Path) -> None:
        self._fd: int | None = None
        if fcntl is not None:
            with contextlib.suppress(OSError):
                self._fd = os.open(f"{path}-turn", os.O_RDWR | os.O_CREAT, 0o666)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Waits for the turn, then holds it while the block runs (without a turn file: runs it)."""
        fd = self._fd
        if fd is None:
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Closes the turn file: no turn is taken any more. Call it once no write runs."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
