"""The SQLite engine: one database file, one writer connection, a pool of readers.

Every write goes through the one writer connection (``jobtable._engines.sqlite.writer``),
so writes never contend inside the process, and whoever holds it commits
every operation already waiting in one transaction (group commit): under
load, many writes cost one fsync. The processes sharing the file wait for
its write lock in SQLite's busy handler, up to the store's busy timeout. An
uncontended synchronous write commits in its caller's thread. Reads run in
the caller's thread on pooled read-only connections, which WAL mode lets
proceed while the writer commits.

The only SQL here is engine plumbing that sqlc cannot express (PRAGMA, BEGIN,
SAVEPOINT, COMMIT); every query of the runner comes from the generated
``Querier``.
"""

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from jobtable._engines.base import Queries
from jobtable._engines.sqlite.errors import driver_errors
from jobtable._engines.sqlite.file import (
    SCHEMA_VERSION,
    SQLiteSchema,
    check_file,
    check_schema,
    check_tables,
    connect,
    enter_wal,
    migrate,
)
from jobtable._engines.sqlite.queries import queries as _queries
from jobtable._engines.sqlite.text import Connection
from jobtable._engines.sqlite.transaction import read_in, write_in
from jobtable._engines.sqlite.wal_limit import WAL_LIMIT, WalLimit, check_wal_limit
from jobtable._engines.sqlite.watch import WalWatcher
from jobtable._engines.sqlite.writer import Writer
from jobtable._errors import StoreError, schema_refusal
from jobtable.db.sqlite.schema import SCHEMA

T = TypeVar("T")


def _nothing(q: Queries) -> None:
    """An empty write: it takes the write lock once another process's commit released it."""


_SCHEMA = SQLiteSchema(SCHEMA)


def read_schema_version(path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> int:
    """Returns the version of the jobtable schema in the file at path, 0 when it has none.

    Changes nothing, and creates no file. Raises StoreError as
    ``SQLiteEngine.open`` does for a path or a file it refuses.
    """
    resolved = Path(path).absolute()
    if not check_file(resolved):
        return 0
    with driver_errors(resolved):
        conn = connect(resolved, create=False, busy_timeout=busy_timeout)
        try:
            return check_schema(_SCHEMA, conn, resolved)
        finally:
            conn.close()


class SQLiteEngine:
    """A SQLite database file behind the runner (see ``jobtable._engines.base.Engine``).

    Writes go through one writer connection, grouped into shared
    transactions (see ``jobtable._engines.sqlite.writer``); reads
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
        wal_limit: int | None = WAL_LIMIT,
    ) -> None:
        """Takes over an open, migrated writer connection; use ``open`` instead."""
        self._path = path
        self._watch = watch
        self._watchers: set[WalWatcher] = set()
        self._busy_timeout = busy_timeout
        # The writer's Querier, and the proof (for mypy) that the generated
        # Querier satisfies the seam.
        queries = _queries(writer)
        limit = None if wal_limit is None else WalLimit(path, wal_limit)
        self._writer = Writer(path, writer, queries, limit)
        self._lock = threading.Lock()
        self._closed = False
        self._reader_slots = threading.BoundedSemaphore(readers)
        self._idle_readers: list[Connection] = []

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        durable: bool = True,
        busy_timeout: float = 5.0,
        readers: int = 4,
        watch: bool = True,
        upgrade: bool = True,
        wal_limit: int | None = WAL_LIMIT,
    ) -> "SQLiteEngine":
        """Opens the database at path, creating it or its schema when missing.

        Refuses, with a StoreError naming the path, a directory, a path in a
        missing folder, a read-only file or folder (by its permission bits,
        even for root), a file that is not a SQLite database, a schema newer
        than this library or of a version it never wrote, and a database
        that already has a table of jobtable's name that jobtable did not
        create; a refused file is left as it was. A database with other
        tables gets jobtable's tables added.

        With durable, a write that returned is on disk (synchronous=FULL).
        Without it (synchronous=NORMAL), a power loss may lose the last
        committed writes, but never corrupts the database; a crash of the
        process alone loses nothing. busy_timeout is how long, in seconds, to
        wait for the write lock of a connection that does not take turns
        (``Turns``: jobtable's other processes do). Without watch, ``listen``
        returns None, so runners find other processes' jobs by polling alone.
        Without upgrade, a missing file or schema, or an older one, is refused
        (StoreError) and left as it is. Once the ``-wal`` file passes
        wal_limit bytes, the writer checkpoints and empties it, so constant
        readers cannot make it grow without bound (see ``WalLimit``); None
        leaves it to SQLite's automatic checkpoint alone.
        """
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout is {busy_timeout}, want at least 0")
        if readers < 1:
            raise ValueError(f"readers is {readers}, want at least 1")
        check_wal_limit(wal_limit)
        if os.fspath(path) in ("", ":memory:"):
            raise StoreError(f"cannot open {path!r}: jobtable needs a database file")
        resolved = Path(path).absolute()
        has_content = check_file(resolved)
        if not has_content and not upgrade:
            raise StoreError(schema_refusal(str(resolved), 0, SCHEMA_VERSION))
        with driver_errors(resolved):
            conn = connect(resolved, create=not has_content, busy_timeout=busy_timeout)
            try:
                # Refuse before anything that writes (journal mode, schema),
                # so a refused file is left byte for byte as it was.
                version = check_schema(_SCHEMA, conn, resolved)
                if version != SCHEMA_VERSION and not upgrade:
                    raise StoreError(schema_refusal(str(resolved), version, SCHEMA_VERSION))
                if version == SCHEMA_VERSION:
                    check_tables(_SCHEMA, conn, resolved, version)
                enter_wal(conn, resolved, busy_timeout)
                conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000):d}")
                conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                if version != SCHEMA_VERSION:
                    migrate(_SCHEMA, conn, resolved)
            except BaseException:
                conn.close()
                raise
        return cls(
            resolved,
            conn,
            busy_timeout=busy_timeout,
            readers=readers,
            watch=watch,
            wal_limit=wal_limit,
        )

    @property
    def path(self) -> Path:
        """The absolute path of the database file."""
        return self._path

    def __repr__(self) -> str:
        return f"SQLiteEngine({str(self._path)!r})"

    @property
    def commits(self) -> int:
        """How many transactions the writer has committed: a signal for tests."""
        return self._writer.commits

    def write(self, op: Callable[[Queries], T]) -> T:
        """Runs op in a write transaction and returns its result once committed.

        op shares its transaction with the other writes waiting at the time,
        inside its own savepoint: if op raises, its writes alone are rolled
        back and the exception reaches this caller. When no other write is
        under way, op runs in the calling thread. Must not be called from
        inside a write operation.
        """
        return self._writer.write(op)

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        """Does what ``write`` does without blocking the event loop: op runs in another thread.

        Cancelling the caller before op starts means op never runs; once it
        has started it still commits.
        """
        return await self._writer.awrite(op)

    def read(self, op: Callable[[Queries], T]) -> T:
        """Runs op on a read-only connection, in one snapshot, in the calling thread.

        Waits for a free connection when all ``readers`` are in use. Sees every
        write that returned before it started.
        """
        self._check_open()
        with self._reader_slots:
            conn = self._borrow_reader()
            try:
                with driver_errors(self._path):
                    conn.execute("BEGIN")
                    try:
                        return conn.run(op, _queries(conn))
                    finally:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
            finally:
                self._return_reader(conn)

    async def aread(self, op: Callable[[Queries], T]) -> T:
        """Does what ``read`` does in a worker thread, without blocking the event loop."""
        return await asyncio.to_thread(self.read, op)

    def write_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Runs the write op on conn, a sqlite3 connection to this file, in its transaction.

        See ``jobtable._engines.sqlite.transaction.write_in``; a sqlite3 error is a
        StoreError naming the file.
        """
        self._check_open()
        with driver_errors(self._path):
            return write_in(self._path, conn, op, where)

    def read_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Runs op, which only reads, on conn, a sqlite3 connection to this file."""
        self._check_open()
        with driver_errors(self._path):
            return read_in(self._path, conn, op, where)

    async def awrite_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Refuses: sqlite3 connections are synchronous, so SQLite takes write_in alone."""
        raise TypeError(
            f"{where}: the store is SQLite, whose sqlite3 connections are synchronous: "
            f"enqueue in the transaction with the sync form (enqueue(..., conn=conn)); "
            f"got {type(conn).__module__}.{type(conn).__qualname__}"
        )

    async def aread_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Refuses, as awrite_in does: sqlite3 connections are synchronous; read_in takes them."""
        raise TypeError(
            f"{where}: the store is SQLite, whose sqlite3 connections are synchronous: "
            f"read its transaction with the sync form; "
            f"got {type(conn).__module__}.{type(conn).__qualname__}"
        )

    def listen(
        self,
        wake: Callable[[], None],
        cancelled: Callable[[], None] | None = None,
        ready: Callable[[str], None] | None = None,
    ) -> Callable[[], None] | None:
        """Calls wake, from a thread of its own, after each commit to the file (``WalWatcher``).

        cancelled and ready are never called: a commit does not tell what it
        wrote, so runners poll for cancel requests, and the wake after a
        commit that released a held job is wake's.

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

    def listen_ended(self, wake: Callable[[str], None]) -> Callable[[], None] | None:
        """Calls wake("") after each commit to the file, as listen (``EndedJobs``).

        A commit does not tell which jobs it ended: the waiters check theirs.
        The watch can wake while the commit is still under way, so first an
        empty write waits for the write lock (it writes nothing to the WAL,
        so it wakes no one): a read after it sees the commit.
        """

        def woken() -> None:
            try:
                self.write(_nothing)
            finally:
                wake("")

        return self.listen(woken)

    def pragma(self, name: str) -> object:
        """Returns PRAGMA name as the writer connection sees it: a diagnostic.

        Raises ValueError for a name that is not a plain identifier.
        """
        if not name.isidentifier():
            raise ValueError(f"pragma {name!r}: not a pragma name")

        def read_pragma(_: Queries) -> object:
            row = self._writer.connection.execute(f"PRAGMA {name}").fetchone()
            return None if row is None else row[0]

        return self.write(read_pragma)

    def close(self) -> None:
        """Stops every listener, finishes the writes already queued, then closes every connection.

        Calling it again does nothing. Any later use raises StoreError.
        """
        self._writer.refuse_in_op("close")
        with self._lock:
            if self._closed:
                return
            self._closed = True
            watchers, self._watchers = self._watchers, set()
        for watcher in watchers:
            watcher.stop()
        self._writer.close()
        with self._lock:
            idle, self._idle_readers = self._idle_readers, []
        for conn in idle:
            conn.close()

    def _closed_error(self) -> StoreError:
        return StoreError(f"sqlite store {self._path}: the store is closed")

    def _check_open(self) -> None:
        if self._closed:
            raise self._closed_error()

    def _borrow_reader(self) -> Connection:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            if self._idle_readers:
                return self._idle_readers.pop()
        with driver_errors(self._path):
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
