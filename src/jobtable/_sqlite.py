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
import re
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from jobtable._engine import ClaimedRow, Queries
from jobtable._errors import StoreError
from jobtable.db.sqlite.jobs import CreateJobsParams, Querier
from jobtable.db.sqlite.schema import SCHEMA

T = TypeVar("T")

SCHEMA_VERSION = 1
"""The schema version this library writes, recorded in ``PRAGMA user_version``.

Bump it with every change to schema.sql, and add the step from the previous
version to ``_UPGRADES``.
"""

MAX_BATCH = 512
"""The most operations the writer commits in one transaction."""


def _upgrade_steps() -> dict[int, Callable[[sqlite3.Connection], None]]:
    # Maps version N to the step that brings a database from N to N + 1, run
    # in order inside the one transaction that also records the new version.
    # A new database gets schema.sql whole instead, which is always the latest
    # version. There are no steps yet: version 1 is the first.
    return {}


_UPGRADES = _upgrade_steps()


def _split_statements(script: str) -> list[str]:
    """Returns the statements of script, each with the comments above it."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending)
            pending = ""
    leftover = [
        ln for ln in pending.splitlines() if ln.strip() and not ln.lstrip().startswith("--")
    ]
    if leftover:
        raise ValueError(f"schema ends with an incomplete statement: {leftover[0]!r}")
    return statements


_SCHEMA_STATEMENTS = _split_statements(SCHEMA)

_CREATE_NAME = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIEW|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
    re.IGNORECASE | re.MULTILINE,
)

# The names schema.sql creates: a database that already has any of them and
# no jobtable version was not made by jobtable, and is refused.
_SCHEMA_NAMES = frozenset(
    name.lower() for statement in _SCHEMA_STATEMENTS for name in _CREATE_NAME.findall(statement)
)


_TRANSIENT_CODES = frozenset(
    getattr(sqlite3, name)
    for name in (
        "SQLITE_BUSY",
        "SQLITE_LOCKED",
        "SQLITE_NOMEM",
        "SQLITE_IOERR",
        "SQLITE_FULL",
        "SQLITE_CANTOPEN",
        "SQLITE_PROTOCOL",
        "SQLITE_INTERRUPT",
    )
)
"""SQLite's primary result codes that a later retry of the same call may not get."""


@contextlib.contextmanager
def _driver_errors(path: Path) -> Iterator[None]:
    """Turns a sqlite3 error into a StoreError naming path; lets every other exception by.

    This is the one place a driver error is translated, and classified: a
    busy or locked database, an I/O error, a full disk or a file that cannot
    be opened now is transient (the same call may succeed later); any other
    error (a constraint, bad data, a bad statement) is not.
    """
    try:
        yield
    except sqlite3.Error as err:
        code = getattr(err, "sqlite_errorcode", None)
        transient = code is not None and code & 0xFF in _TRANSIENT_CODES
        raise StoreError(f"sqlite store {path}: {err}", transient=transient) from err


def _connect(path: Path, *, create: bool, busy_timeout: float) -> sqlite3.Connection:
    # A file: URI with mode=rw never creates a file, so opening an existing
    # database cannot leave a new empty one behind if it vanished meanwhile.
    mode = "rwc" if create else "rw"
    return sqlite3.connect(
        f"{path.as_uri()}?mode={mode}",
        uri=True,
        timeout=busy_timeout,
        isolation_level=None,
        check_same_thread=False,
    )


def _check_file(path: Path) -> bool:
    """Refuses a path that cannot hold a database; returns whether the file has content.

    Only asks the file system: it never opens the file. Closing any
    descriptor of a file drops every POSIX lock this process holds on it,
    those of SQLite's open connections included, so reading the header here
    would break the locking of another store on the same file.
    """
    if path.is_dir():
        raise StoreError(f"cannot open {path}: it is a directory")
    if not path.parent.is_dir():
        raise StoreError(f"cannot open {path}: the folder {path.parent} does not exist")
    if _read_only(path.parent):
        raise StoreError(
            f"cannot open {path}: the folder {path.parent} is read-only, and SQLite's "
            "write-ahead log needs files beside the database"
        )
    try:
        info = path.stat()
    except FileNotFoundError:
        return False
    except OSError as err:
        raise StoreError(f"cannot open {path}: {err.strerror or err}") from err
    if _read_only(path, info.st_mode):
        raise StoreError(f"cannot open {path}: the file is read-only")
    return info.st_size > 0


def _read_only(path: Path, mode: int | None = None) -> bool:
    """Tells whether path is meant to be read-only: no write permission bit, or none for us.

    The bits count even for root, whom the operating system lets write
    anyway: a database its owner made read-only is not written by jobtable.
    """
    if mode is None:
        mode = path.stat().st_mode
    return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK)


def _check_schema(conn: sqlite3.Connection, path: Path) -> int:
    """Returns the database's jobtable schema version; refuses one jobtable cannot use.

    Only reads.
    """
    try:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as err:
        if "not a database" in str(err):
            raise StoreError(f"cannot open {path}: the file is not a SQLite database") from err
        raise
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"cannot open {path}: its schema version {version} is newer than this "
            f"jobtable's ({SCHEMA_VERSION}); upgrade jobtable"
        )
    if version < 0 or any(step not in _UPGRADES for step in range(max(version, 1), SCHEMA_VERSION)):
        raise StoreError(
            f"cannot open {path}: its schema version {version} (PRAGMA user_version) is not "
            "one jobtable ever wrote; the file is left as it is"
        )
    if version == 0:
        rows = conn.execute("SELECT type, name FROM sqlite_schema").fetchall()
        for kind, name in rows:
            if str(name).lower() in _SCHEMA_NAMES:
                raise StoreError(
                    f"cannot open {path}: it already has a {kind} named {name} "
                    "that jobtable did not create"
                )
    return version


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Brings the schema to SCHEMA_VERSION in one transaction: all of it or none."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Checked again under the write lock: another process may have
        # created or upgraded the schema since the first look.
        version = _check_schema(conn, path)
        if version == 0:
            for statement in _SCHEMA_STATEMENTS:
                conn.execute(statement)
        else:
            for step in range(version, SCHEMA_VERSION):
                _UPGRADES[step](conn)
        if version != SCHEMA_VERSION:
            # A PRAGMA takes no parameters; the value is our own integer.
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class _Queries(Querier):
    """The generated Querier with the seam's calls that take several rows at once."""

    def insert_jobs(self, *, kind: str, jobs: Sequence[tuple[str, str]], now: str) -> None:
        self.create_jobs(
            CreateJobsParams(id=job_id, kind=kind, payload=payload, now=now)
            for job_id, payload in jobs
        )

    def finish_and_claim_jobs(
        self,
        *,
        ids: list[str],
        attempts: list[int],
        results: list[str | None],
        errors: list[str | None],
        runner: str | None,
        now: str,
        max_jobs: int,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        # A statement per job costs no round trip here: they all share the
        # writer's transaction.
        finished: list[str] = []
        for job_id, attempt, result, error in zip(ids, attempts, results, errors, strict=True):
            if error is None:
                count = self.succeed_job(result=result, now=now, id=job_id, attempt=attempt)
            else:
                count = self.fail_job(error=error, now=now, id=job_id, attempt=attempt)
            if count:
                finished.append(job_id)
        if max_jobs <= 0:
            return finished, []
        return finished, self.claim_next_job(runner=runner, now=now, max_jobs=max_jobs)


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
        writer: sqlite3.Connection,
        *,
        busy_timeout: float,
        readers: int,
    ) -> None:
        """Takes over an open, migrated writer connection; use ``open`` instead."""
        self._path = path
        self._writer = writer
        self._busy_timeout = busy_timeout
        # The writer's Querier, and the proof (for mypy) that the generated
        # Querier satisfies the seam.
        self._queries: Queries = _Queries(writer)
        self._lock = threading.Lock()
        self._closed = False
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._reader_slots = threading.BoundedSemaphore(readers)
        self._idle_readers: list[sqlite3.Connection] = []
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
    ) -> "SQLiteEngine":
        """Opens the database at path, creating it or its schema when missing.

        Refuses, with a StoreError naming the path, a directory, a path in a
        missing folder, a read-only file or folder (by its permission bits,
        even for root), a file that is not a SQLite database, a schema newer
        than this library or of a version it never wrote, and a database that already has a table of
        jobtable's name that jobtable did not create; a refused file is left
        as it was. A database with other tables gets jobtable's tables added.

        With durable, a write that returned is on disk (synchronous=FULL).
        Without it (synchronous=NORMAL), a power loss may lose the last
        committed writes, but never corrupts the database; a crash of the
        process alone loses nothing. busy_timeout is how long, in seconds, to
        wait for another process's write lock.
        """
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout is {busy_timeout}, want at least 0")
        if readers < 1:
            raise ValueError(f"readers is {readers}, want at least 1")
        if os.fspath(path) in ("", ":memory:"):
            raise StoreError(f"cannot open {path!r}: jobtable needs a database file")
        resolved = Path(path).absolute()
        has_content = _check_file(resolved)
        with _driver_errors(resolved):
            conn = _connect(resolved, create=not has_content, busy_timeout=busy_timeout)
            try:
                # Refuse before anything that writes (journal mode, schema),
                # so a refused file is left byte for byte as it was.
                version = _check_schema(conn, resolved)
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(
                        f"cannot open {resolved}: WAL mode is unavailable (journal mode {mode})"
                    )
                conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000):d}")
                conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                if version != SCHEMA_VERSION:
                    _migrate(conn, resolved)
            except BaseException:
                conn.close()
                raise
        return cls(resolved, conn, busy_timeout=busy_timeout, readers=readers)

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
                        return op(_Queries(conn))
                    finally:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
            finally:
                self._return_reader(conn)

    async def aread(self, op: Callable[[Queries], T]) -> T:
        """Does what ``read`` does in a worker thread, without blocking the event loop."""
        return await asyncio.to_thread(self.read, op)

    def listen(self, wake: Callable[[], None]) -> Callable[[], None] | None:
        """Returns None: SQLite cannot tell one process about another's writes.

        The runner polls instead.
        """
        return None

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
        """Finishes the writes already queued, then closes every connection.

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

    def _borrow_reader(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            if self._idle_readers:
                return self._idle_readers.pop()
        with _driver_errors(self._path):
            conn = _connect(self._path, create=False, busy_timeout=self._busy_timeout)
            try:
                conn.execute("PRAGMA query_only = ON")
            except BaseException:
                conn.close()
                raise
        return conn

    def _return_reader(self, conn: sqlite3.Connection) -> None:
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
                            value = call.op(self._queries)
                    except BaseException as exc:
                        outcomes.append(_Outcome(call, False, exc))
                        if not conn.in_transaction:
                            # SQLite rolled back the whole transaction (a
                            # full disk, an I/O error): the batch is lost.
                            raise StoreError(
                                f"sqlite store {self._path}: the transaction was rolled back: "
                                f"{exc}",
                                transient=True,
                            ) from exc
                        conn.execute("ROLLBACK TO jobtable_op")
                        conn.execute("RELEASE jobtable_op")
                    else:
                        conn.execute("RELEASE jobtable_op")
                        outcomes.append(_Outcome(call, True, value))
                conn.execute("COMMIT")
        except BaseException as batch_error:
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
