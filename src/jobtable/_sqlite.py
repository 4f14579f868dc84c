"""The SQLite engine: one database file, one writer thread, a pool of readers.

Every write goes through one thread that owns the only writer connection, so
writes never contend inside the process, and the writer commits every
operation already waiting in one transaction (group commit): under load, many
writes cost one fsync. Reads run in the caller's thread on pooled read-only
connections, which WAL mode lets proceed while the writer commits.

The only SQL here is engine plumbing that sqlc cannot express (PRAGMA, BEGIN,
SAVEPOINT, COMMIT); every query of the runner comes from the generated
``Querier``.
"""

import asyncio
import contextlib
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from jobtable._engine import Queries
from jobtable._errors import StoreError
from jobtable._sqlite_file import (
    SCHEMA_VERSION,
    SQLiteSchema,
    check_file,
    check_schema,
    connect,
    migrate,
)
from jobtable._sqlite_queries import Queries as _Queries
from jobtable._sqlite_text import Connection
from jobtable._sqlite_watch import WalWatcher
from jobtable.db.sqlite.schema import SCHEMA

T = TypeVar("T")

MAX_BATCH = 512
"""The most operations the writer commits in one transaction."""

_SCHEMA = SQLiteSchema(SCHEMA)


@contextlib.contextmanager
def _driver_errors(path: Path) -> Iterator[None]:
    """Turns a sqlite3 error into a StoreError naming path; lets every other exception by.

    This is the one place a driver error is translated.
    """
    try:
        yield
    except sqlite3.Error as err:
        raise StoreError(f"sqlite store {path}: {err}") from err


@dataclass(slots=True)
class _Call:
    op: Callable[[Queries], Any]
    future: Future[Any]


@dataclass(slots=True)
class _Outcome:
    call: _Call
    ok: bool
    value: Any


class SQLiteEngine:
    """A SQLite database file behind the runner (see ``jobtable._engine.Engine``).

    Writes run on one writer thread, grouped into shared transactions; reads
    run in the caller's thread on up to ``readers`` pooled connections. All
    methods are safe from any thread. A sqlite3 error becomes a StoreError
    naming the file; any other exception an operation raises reaches its
    caller unchanged.
    """

    def __init__(
        self,
        path: Path,
        writer: Connection,
        *,
        busy_timeout: float,
        readers: int,
        watch: bool = True,
    ) -> None:
        """Takes over an open, migrated writer connection; use ``open`` instead."""
        self._path = path
        self._watch = watch
        self._watchers: set[WalWatcher] = set()
        self._writer = writer
        self._busy_timeout = busy_timeout
        # The writer's Querier, and the proof (for mypy) that the generated
        # Querier satisfies the seam.
        self._queries: Queries = _Queries(writer)
        self._lock = threading.Lock()
        self._closed = False
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._reader_slots = threading.BoundedSemaphore(readers)
        self._idle_readers: list[Connection] = []
        self.commits = 0
        """How many transactions the writer has committed: a signal for tests."""
        self._thread = threading.Thread(
            target=self._write_loop, name=f"jobtable-sqlite-writer {path.name}", daemon=True
        )
        self._thread.start()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        durable: bool = True,
        busy_timeout: float = 5.0,
        readers: int = 4,
        watch: bool = True,
    ) -> "SQLiteEngine":
        """Opens the database at path, creating it or its schema when missing.

        Refuses, with a StoreError naming the path, a directory, a path in a
        missing folder, a file that is not a SQLite database, a schema newer
        than this library, and a database that already has a table of
        jobtable's name that jobtable did not create; a refused file is left
        as it was. A database with other tables gets jobtable's tables added.

        With durable, a write that returned is on disk (synchronous=FULL).
        Without it (synchronous=NORMAL), a power loss may lose the last
        committed writes, but never corrupts the database; a crash of the
        process alone loses nothing. busy_timeout is how long, in seconds, to
        wait for another process's write lock. Without watch, ``listen``
        returns None, so runners find other processes' jobs by polling alone.
        """
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout is {busy_timeout}, want at least 0")
        if readers < 1:
            raise ValueError(f"readers is {readers}, want at least 1")
        if os.fspath(path) in ("", ":memory:"):
            raise StoreError(f"cannot open {path!r}: jobtable needs a database file")
        resolved = Path(path).absolute()
        has_content = check_file(resolved)
        with _driver_errors(resolved):
            conn = connect(resolved, create=not has_content, busy_timeout=busy_timeout)
            try:
                # Refuse before anything that writes (journal mode, schema),
                # so a refused file is left byte for byte as it was.
                version = check_schema(_SCHEMA, conn, resolved)
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(
                        f"cannot open {resolved}: WAL mode is unavailable (journal mode {mode})"
                    )
                conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000):d}")
                conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                if version != SCHEMA_VERSION:
                    migrate(_SCHEMA, conn, resolved)
            except BaseException:
                conn.close()
                raise
        return cls(resolved, conn, busy_timeout=busy_timeout, readers=readers, watch=watch)

    @property
    def path(self) -> Path:
        """The absolute path of the database file."""
        return self._path

    def __repr__(self) -> str:
        return f"SQLiteEngine({str(self._path)!r})"

    def write(self, op: Callable[[Queries], T]) -> T:
        """Runs op in a write transaction and returns its result once committed.

        op shares its transaction with the other writes waiting at the time,
        inside its own savepoint: if op raises, its writes alone are rolled
        back and the exception reaches this caller. Must not be called from
        inside a write operation.
        """
        if threading.current_thread() is self._thread:
            raise StoreError(
                f"sqlite store {self._path}: write called from inside a write operation"
            )
        return self._submit(op).result()

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        """Does what ``write`` does without blocking the event loop.

        Cancelling the caller before op starts means op never runs; once it
        has started it still commits.
        """
        return await asyncio.wrap_future(self._submit(op))

    def read(self, op: Callable[[Queries], T]) -> T:
        """Runs op on a read-only connection, in one snapshot, in the calling thread.

        Waits for a free connection when all ``readers`` are in use. Sees every
        write that returned before it started.
        """
        self._check_open()
        with self._reader_slots:
            conn = self._borrow_reader()
            try:
                with _driver_errors(self._path):
                    conn.execute("BEGIN")
                    try:
                        return conn.run(op, _Queries(conn))
                    finally:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
            finally:
                self._return_reader(conn)

    async def aread(self, op: Callable[[Queries], T]) -> T:
        """Does what ``read`` does in a worker thread, without blocking the event loop."""
        return await asyncio.to_thread(self.read, op)

    def listen(self, wake: Callable[[], None]) -> Callable[[], None] | None:
        """Calls wake, from a thread of its own, after each commit to the file (``WalWatcher``).

        Other processes' commits wake, and so, needlessly, do this process's
        own. The watch is set before it returns. Returns the function that
        stops listening: once it returns, wake is not called again and the
        watch is closed; calling it again does nothing. Returns None where
        the file system cannot tell (no inotify) or the engine was opened
        without watch: the runner then polls alone. Raises StoreError once
        the engine is closed.
        """
        self._check_open()
        if not self._watch:
            return None
        watcher = WalWatcher.start(self._path, wake)
        if watcher is None:
            return None
        with self._lock:
            closed = self._closed
            if not closed:
                self._watchers.add(watcher)
        if closed:
            watcher.stop()
            raise self._closed_error()

        def stop() -> None:
            with self._lock:
                self._watchers.discard(watcher)
            watcher.stop()

        return stop

    def pragma(self, name: str) -> object:
        """Returns PRAGMA name as the writer connection sees it: a diagnostic.

        Raises ValueError for a name that is not a plain identifier.
        """
        if not name.isidentifier():
            raise ValueError(f"pragma {name!r}: not a pragma name")

        def read_pragma(_: Queries) -> object:
            row = self._writer.execute(f"PRAGMA {name}").fetchone()
            return None if row is None else row[0]

        return self.write(read_pragma)

    def close(self) -> None:
        """Stops every listener, finishes the writes already queued, then closes every connection.

        Calling it again does nothing. Any later use raises StoreError.
        """
        with self._lock:
            if self._closed:
                return
            if threading.current_thread() is self._thread:
                raise StoreError(
                    f"sqlite store {self._path}: close called from inside a write operation"
                )
            self._closed = True
            self._calls.put(None)
            watchers, self._watchers = self._watchers, set()
        for watcher in watchers:
            watcher.stop()
        self._thread.join()
        with self._lock:
            idle, self._idle_readers = self._idle_readers, []
        for conn in idle:
            conn.close()

    def _closed_error(self) -> StoreError:
        return StoreError(f"sqlite store {self._path}: the store is closed")

    def _check_open(self) -> None:
        if self._closed:
            raise self._closed_error()

    def _submit(self, op: Callable[[Queries], T]) -> "Future[T]":
        future: Future[T] = Future()
        # Under the lock so no call lands behind the stop marker close() puts.
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._calls.put(_Call(op, future))
        return future

    def _borrow_reader(self) -> Connection:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            if self._idle_readers:
                return self._idle_readers.pop()
        with _driver_errors(self._path):
            conn = connect(self._path, create=False, busy_timeout=self._busy_timeout)
            try:
                conn.execute("PRAGMA query_only = ON")
            except BaseException:
                conn.close()
                raise
        return conn

    def _return_reader(self, conn: Connection) -> None:
        with self._lock:
            if not self._closed and not conn.in_transaction:
                self._idle_readers.append(conn)
                return
        conn.close()

    def _write_loop(self) -> None:
        try:
            stopping = False
            while not stopping:
                first = self._calls.get()
                if first is None:
                    break
                batch = [first]
                # Take what is already waiting, never wait for more: a lone
                # write commits at once.
                while len(batch) < MAX_BATCH:
                    try:
                        call = self._calls.get_nowait()
                    except queue.Empty:
                        break
                    if call is None:
                        stopping = True
                        break
                    batch.append(call)
                self._commit_batch(batch)
        finally:
            self._writer.close()

    def _commit_batch(self, batch: list[_Call]) -> None:
        calls = [call for call in batch if call.future.set_running_or_notify_cancel()]
        if not calls:
            return
        conn = self._writer
        outcomes: list[_Outcome] = []
        try:
            with _driver_errors(self._path):
                conn.execute("BEGIN IMMEDIATE")
                for call in calls:
                    conn.execute("SAVEPOINT jobtable_op")
                    try:
                        with _driver_errors(self._path):
                            value = conn.run(call.op, self._queries)
                    except BaseException as exc:
                        outcomes.append(_Outcome(call, False, exc))
                        if not conn.in_transaction:
                            # SQLite rolled back the whole transaction (a
                            # full disk, an I/O error): the batch is lost.
                            raise StoreError(
                                f"sqlite store {self._path}: the transaction was rolled back: {exc}"
                            ) from exc
                        conn.execute("ROLLBACK TO jobtable_op")
                        conn.execute("RELEASE jobtable_op")
                    else:
                        conn.execute("RELEASE jobtable_op")
                        outcomes.append(_Outcome(call, True, value))
                conn.execute("COMMIT")
        except BaseException as batch_error:
            conn.finish_statements()
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            # An op that raised keeps its own exception; every other op of the
            # batch had writes that were not committed, and gets the cause.
            failed = {id(o.call): o.value for o in outcomes if not o.ok}
            for call in calls:
                call.future.set_exception(failed.get(id(call), batch_error))
            return
        self.commits += 1
        # Only now, after COMMIT: no caller sees a result before it is stored.
        for outcome in outcomes:
            if outcome.ok:
                outcome.call.future.set_result(outcome.value)
            else:
                outcome.call.future.set_exception(outcome.value)
