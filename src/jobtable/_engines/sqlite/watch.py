"""Wakes a runner when another process writes a SQLite database: inotify on the WAL.

In WAL mode every commit appends to the ``-wal`` file beside the database, so
a write to that file is the earliest sign that another connection committed.
``WalWatcher`` asks the kernel (Linux inotify, through libc with ctypes) to
report writes in the database's folder and calls wake for those to the
``-wal`` file. It watches the folder, not the file, because SQLite creates,
truncates and deletes the ``-wal`` file as it checkpoints; a folder watch sees
a new file of that name at once and needs no re-arming.

inotify never opens the watched paths: it holds the folder's inode, not a
file descriptor of it, so it cannot drop SQLite's POSIX locks on the database
(closing any descriptor of a file drops them all). The thread sleeps in
poll() on the inotify descriptor and a stop pipe, so an idle watcher costs no
CPU. It also sees this process's own commits: such a wake is spurious but
harmless (a claim that finds nothing writes nothing, so it wakes nothing).

The wake can come before the commit is visible: the writer still holds
SQLite's write lock while it writes the WAL, and a claim, which takes that
lock, waits for the commit to finish, so it sees the job.
"""

import contextlib
import ctypes
import logging
import os
import select
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path

_logger = logging.getLogger("jobtable.sqlite")

# From <sys/inotify.h>.
_IN_MODIFY = 0x00000002
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_UNMOUNT = 0x00002000
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000

_WATCH_MASK = _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
_WAL_CHANGED = _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO
_FOLDER_GONE = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT | _IN_IGNORED

_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_READ_SIZE = 64 * 1024
_PAUSE_MS = 1
"""How long the watcher waits after a wake before it reads again, in milliseconds."""


class _Inotify:
    """libc's inotify_init1 and inotify_add_watch, or the reason they are unavailable."""

    def __init__(self) -> None:
        self.init1: Callable[[int], int] | None = None
        self.add_watch: Callable[[int, bytes, int], int] | None = None
        self.missing = ""
        if not sys.platform.startswith("linux"):
            self.missing = f"inotify is Linux only (this is {sys.platform})"
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init1 = libc.inotify_init1
            add_watch = libc.inotify_add_watch
        except (OSError, AttributeError) as err:
            self.missing = f"libc has no inotify: {err}"
            return
        init1.argtypes = [ctypes.c_int]
        init1.restype = ctypes.c_int
        add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        add_watch.restype = ctypes.c_int
        self.init1 = init1
        self.add_watch = add_watch


_inotify: _Inotify | None = None
_inotify_lock = threading.Lock()


def _load() -> _Inotify:
    global _inotify
    with _inotify_lock:
        if _inotify is None:
            _inotify = _Inotify()
        return _inotify


def _os_error(call: str, path: str) -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, f"{call}: {os.strerror(errno)}", path)


class WalWatcher:
    """Calls wake, from a thread of its own, after each write to a database's ``-wal`` file.

    Writes that arrive together wake once. wake should return quickly; an
    exception from it is logged and the watcher goes on. Use ``start``.
    """

    def __init__(self, fd: int, folder: str, wal_name: str, wake: Callable[[], None]) -> None:
        """Takes over an inotify descriptor watching folder; use ``start`` instead."""
        self._fd = fd
        self._folder = folder
        self._wal_name = os.fsencode(wal_name)
        self._wake = wake
        self._lock = threading.Lock()
        self._stopping = False
        self._closed = False
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(
            target=self._loop, name=f"jobtable-sqlite-watch {wal_name}", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError as err:  # no thread to be had: the caller owns fd still
            os.close(self._stop_r)
            os.close(self._stop_w)
            raise OSError(f"cannot start the watch thread: {err}") from err

    @classmethod
    def start(cls, database: Path, wake: Callable[[], None]) -> "WalWatcher | None":
        """Starts watching the ``-wal`` file of database; returns None where it cannot.

        It cannot without inotify (not Linux), when the database's folder is
        missing or not a folder, or when the kernel refuses another watch; the
        reason is logged as a warning, and the caller relies on polling. The
        watch is set before it returns, so every write after the return wakes.
        """
        real = Path(os.path.realpath(database))
        folder, wal_name = str(real.parent), real.name + "-wal"
        inotify = _load()
        if inotify.init1 is None or inotify.add_watch is None:
            _logger.warning("sqlite store %s: polling only: %s", database, inotify.missing)
            return None
        fd = inotify.init1(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if fd < 0:
                raise _os_error("inotify_init1", folder)
            if inotify.add_watch(fd, os.fsencode(folder), _WATCH_MASK) < 0:
                raise _os_error("inotify_add_watch", folder)
            return cls(fd, folder, wal_name, wake)
        except OSError as err:
            if fd >= 0:
                os.close(fd)
            _logger.warning(
                "sqlite store %s: polling only: cannot watch %s for other processes' writes: %s",
                database,
                folder,
                err.strerror or err,
            )
            return None

    @property
    def fileno(self) -> int:
        """The inotify descriptor, for diagnostics; -1 once it is closed."""
        return -1 if self._closed else self._fd

    @property
    def running(self) -> bool:
        """True while the watcher's thread runs."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stops watching: once it returns, wake is not called again and the descriptors are closed.

        Calling it again does nothing. Called from inside wake, it returns at
        once and the thread ends after wake returns.
        """
        with self._lock:
            self._stopping = True
            if not self._closed:
                with contextlib.suppress(BlockingIOError):
                    os.write(self._stop_w, b"\0")
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _loop(self) -> None:
        try:
            poller = select.poll()
            poller.register(self._fd, select.POLLIN)
            poller.register(self._stop_r, select.POLLIN)
            stop_only = select.poll()
            stop_only.register(self._stop_r, select.POLLIN)
            while not self._stopping:
                ready = {fd for fd, _ in poller.poll()}
                if self._stopping or self._stop_r in ready:
                    break
                try:
                    data = os.read(self._fd, _READ_SIZE)
                except BlockingIOError:
                    continue
                changed, gone = self._scan(data)
                if changed and not self._stopping:
                    self._call_wake()
                    # The rest of this commit's writes (and any other within
                    # the pause) merge into one queued event: one wake, not
                    # one per write. Only a stop cuts the pause short.
                    stop_only.poll(_PAUSE_MS)
                if gone:
                    _logger.warning(
                        "sqlite store folder %s: the watch ended (the folder was moved, "
                        "deleted or unmounted); polling only from now on",
                        self._folder,
                    )
                    break
        except Exception:
            # Never raises into the runner: polling carries on without us.
            _logger.exception("sqlite watcher of %s failed; polling only", self._folder)
        finally:
            with self._lock:
                self._closed = True
                for fd in (self._fd, self._stop_r, self._stop_w):
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def _scan(self, data: bytes) -> tuple[bool, bool]:
        """Returns whether data has a WAL write (or lost events), and whether the watch ended."""
        changed = gone = False
        offset = 0
        while offset + _EVENT.size <= len(data):
            _, mask, _, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            if mask & _IN_Q_OVERFLOW:
                changed = True  # events were dropped: one of them may have been a commit
            elif mask & _FOLDER_GONE and not name:
                gone = True
            elif mask & _WAL_CHANGED and name == self._wal_name:
                changed = True
        return changed, gone

    def _call_wake(self) -> None:
        try:
            self._wake()
        except Exception:
            _logger.exception("sqlite watcher of %s: wake raised", self._folder)
