"""Turns at the write lock for the processes that share one SQLite file.

SQLite's write lock is taken by polling: a writer that finds it held sleeps
(1, 2, 5, 10 ... 100 ms: SQLite's busy handler) and looks again. Between
processes the lock then goes to whoever asks right after a commit, most
often the process that just committed, while the others sleep on, longer
at each miss: several worker processes on one file ran no faster than one,
and a writer could wait out its whole busy_timeout. So before it begins a
transaction, the writer of each process takes its turn on an ``flock`` of
a file beside the database (``<database>-turn``): a process waiting for its
turn waits in the kernel and is woken as the turn is released.

The turn only orders jobtable's writers: SQLite's own lock still guards the
file, so a writer that does not take turns (another program, an
application's transaction) stays correct, and waits as before. A turn not
had within the busy timeout (a process holding it is stopped, say) is given
up, and the write goes on to SQLite's lock, which answers as it always did.
Where the turn file cannot be made (a read-only folder, no ``fcntl``), writes
go on without turns.
"""

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no turns
    fcntl = None  # type: ignore[assignment]


class Turns:
    """This process's place in the turns at one SQLite file's write lock; safe from any thread.

    ``turn`` is a context: the calling thread holds the turn inside it (or
    goes on without it, past timeout). One thread at a time holds it in a
    process: the store's one writer. A waiter that must block hands the
    wait to a thread of its own, so the wait can end at the timeout.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self._timeout = timeout
        self._fd: int | None = None
        if fcntl is not None:
            with contextlib.suppress(OSError):
                self._fd = os.open(f"{path}-turn", os.O_RDWR | os.O_CREAT, 0o666)
        self._mutex = threading.Lock()
        # The kernel wait under way (a thread blocked in flock), and whether
        # a writer still wants what it brings: when not, the turn is released.
        self._waiting: threading.Event | None = None
        self._wanted = False
        # Set by close while a kernel wait is under way: the waiting thread
        # closes the file once its wait ends.
        self._closing = False

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Holds the turn (or, past the timeout, goes on without it) while the block runs."""
        held = self._take()
        try:
            yield
        finally:
            if held:
                self._release()

    def _take(self) -> bool:
        fd = self._fd
        if fd is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:
            return False
        with self._mutex:
            done = self._waiting
            if done is None:
                done = self._waiting = threading.Event()
                threading.Thread(target=self._wait_in_kernel, args=(fd, done), daemon=True).start()
            self._wanted = True
        if done.wait(self._timeout):
            return True
        with self._mutex:
            if done.is_set():  # it came as the wait ended
                return True
            self._wanted = False
            return False

    def _wait_in_kernel(self, fd: int, done: threading.Event) -> None:
        """Blocks until the turn is this process's; hands it over, or releases it if unwanted."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            got = True
        except OSError:
            got = False
        with self._mutex:
            self._waiting = None
            if got and self._wanted and not self._closing:
                self._wanted = False
                done.set()
                return
            closing = self._closing
        with contextlib.suppress(OSError):
            if got:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if closing:
                os.close(fd)

    def _release(self) -> None:
        assert self._fd is not None
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Closes the turn file: no turn is taken any more. Call it once no write runs."""
        with self._mutex:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            if self._waiting is not None:
                self._closing = True  # the thread waiting in the kernel closes it
                return
        os.close(fd)
