"""A write on an application's own psycopg connection, inside its transaction.

An enqueue with ``conn=`` runs its operation (CreateJob, CreateUniqueJobs,
...) through the generated Querier on the caller's connection, so its
inserts commit or roll back with the caller's transaction, and the jobs
table's insert trigger queues the NOTIFY that wakes runners in the same
transaction: PostgreSQL delivers it at commit, never after a rollback. The
caller's connection must reach the store's jobs table: the same server and
database, with a search_path on which the unqualified name ``jobs`` is the
store's table; GetJobsTable proves it before anything is written.

An async connection runs the very same operation: in a worker thread, on a
blocking view of the connection whose every call runs on the event loop
that owns it (``_Blocking``), so no logic exists twice.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar, cast

import psycopg
from psycopg.abc import Params
from psycopg.rows import TupleRow, tuple_row

from jobtable._engines.base import Queries, Statement
from jobtable._engines.postgres.queries import queries
from jobtable.db.postgres import transaction
from jobtable.db.postgres.transaction import GetJobsTableRow

T = TypeVar("T")

JobsTable = GetJobsTableRow
"""Which jobs table a session's unqualified ``jobs`` names: server, database, oid, schema."""

_SyncConnection = psycopg.Connection[TupleRow]


def jobs_table(conn: _SyncConnection) -> JobsTable:
    """The jobs table conn's search_path finds (table_oid 0: none)."""
    row = transaction.Querier(conn).get_jobs_table()
    assert row is not None  # a SELECT without FROM returns its one row
    return row


def check_table(theirs: JobsTable, ours: JobsTable, where: str) -> None:
    """Raises ValueError, naming where, unless theirs is the store's jobs table, ours."""
    if (theirs.server_id, theirs.database_name) != (ours.server_id, ours.database_name):
        raise ValueError(
            f"{where}: conn is connected to database {theirs.database_name!r}"
            f"{' of another server' if theirs.server_id != ours.server_id else ''}, "
            f"not the store's ({ours.database_name!r}): a job can join only a transaction "
            "of the store's own database"
        )
    fix = (
        f"put the store's schema {ours.table_schema!r} on the connection's search_path, "
        "ahead of any other schema with a jobs table"
    )
    if theirs.table_oid == 0:
        raise ValueError(f"{where}: conn's search_path finds no jobs table; {fix}")
    if theirs.table_oid != ours.table_oid:
        raise ValueError(
            f"{where}: conn's search_path finds the jobs table of schema "
            f"{theirs.table_schema!r}, not the store's; {fix}"
        )


def _refused(conn: object, want: str, where: str) -> TypeError:
    """The error for a conn that is not of the psycopg class want (or its SQLAlchemy forms)."""
    sqlalchemy = "AsyncConnection or AsyncSession" if want.startswith("Async") else "Connection"
    if not want.startswith("Async"):
        sqlalchemy += " or Session"
    return TypeError(
        f"{where}: the store is PostgreSQL: conn must be a psycopg.{want}, or a SQLAlchemy "
        f"{sqlalchemy} on psycopg; got {type(conn).__module__}.{type(conn).__qualname__}"
    )


def _write(conn: _SyncConnection, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    check_table(jobs_table(conn), ours, where)
    q = queries(conn)
    one_statement = isinstance(op, Statement)
    if one_statement:
        return op(q)  # one statement: atomic on its own
    # After GetJobsTable a connection that does not autocommit is inside a
    # transaction, so this is a savepoint in it (an error in op leaves the
    # caller's transaction usable); on one that autocommits it is a
    # transaction of op's own, committed at once.
    with conn.transaction():
        return op(q)


@contextlib.contextmanager
def _tuple_rows(conn: psycopg.Connection[Any]) -> Iterator[_SyncConnection]:
    """conn reading rows as tuples, as the generated code does; its own factory comes back after."""
    saved = conn.row_factory
    conn.row_factory = tuple_row
    try:
        yield cast("_SyncConnection", conn)
    finally:
        conn.row_factory = saved


def write_in(conn: object, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    """Runs the write op on conn, in its transaction; ours is the store's jobs table.

    Raises TypeError for a conn that is no psycopg.Connection, ValueError
    when it does not reach ours; a psycopg error reaches the caller.
    """
    if not isinstance(conn, psycopg.Connection):
        raise _refused(conn, "Connection", where)
    with _tuple_rows(conn) as tuples:
        return _write(tuples, ours, op, where)


class _Rows:
    """A statement's rows and row count, read in full on the event loop."""

    def __init__(self, rows: list[TupleRow], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> TupleRow | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[TupleRow]:
        return self._rows


class _Blocking:
    """A psycopg.AsyncConnection seen from a worker thread as the Connection the Querier takes.

    It has what the generated code and ``_write`` call: execute (rows read in
    full), cursor().executemany, transaction(), info and autocommit. Each
    call runs on loop, which owns the connection, and the thread waits for
    it; the loop is free meanwhile, since the task that owns it awaits the
    thread.
    """

    def __init__(
        self, conn: psycopg.AsyncConnection[TupleRow], loop: asyncio.AbstractEventLoop
    ) -> None:
        self._conn = conn
        self._loop = loop
        self.info = conn.info

    @property
    def autocommit(self) -> bool:
        return self._conn.autocommit

    def _wait(self, call: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(call, self._loop).result()

    def execute(self, query: str, params: Params | None = None) -> _Rows:
        async def run() -> _Rows:
            cursor = await self._conn.execute(query, params)
            rows = await cursor.fetchall() if cursor.description is not None else []
            return _Rows(rows, cursor.rowcount)

        return self._wait(run())

    @contextlib.contextmanager
    def cursor(self) -> Iterator["_Blocking"]:
        yield self

    def executemany(self, query: str, params_seq: list[Params]) -> None:
        async def run() -> None:
            async with self._conn.cursor() as cursor:
                await cursor.executemany(query, params_seq)

        self._wait(run())

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        block = self._conn.transaction()
        self._wait(block.__aenter__())
        try:
            yield
        except BaseException as err:
            self._wait(block.__aexit__(type(err), err, err.__traceback__))
            raise
        self._wait(block.__aexit__(None, None, None))


def read_in(conn: object, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    """Runs op, which only reads, on conn, in its transaction, once conn proved to reach ours."""
    if not isinstance(conn, psycopg.Connection):
        raise _refused(conn, "Connection", where)
    with _tuple_rows(conn) as tuples:
        return _read(tuples, ours, op, where)


@contextlib.asynccontextmanager
async def _atuple_rows(
    conn: psycopg.AsyncConnection[Any],
) -> AsyncIterator[psycopg.AsyncConnection[TupleRow]]:
    """The async twin of _tuple_rows."""
    saved = conn.row_factory
    conn.row_factory = tuple_row
    try:
        yield cast("psycopg.AsyncConnection[TupleRow]", conn)
    finally:
        conn.row_factory = saved


async def awrite_in(conn: object, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    """The async form of write_in, on a psycopg.AsyncConnection.

    Cancelling the caller while op runs does not stop it: its statements
    still run, and the caller's transaction is best rolled back.
    """
    if not isinstance(conn, psycopg.AsyncConnection):
        raise _refused(conn, "AsyncConnection", where)
    async with _atuple_rows(conn) as tuples:
        blocking = cast("_SyncConnection", _Blocking(tuples, asyncio.get_running_loop()))
        return await asyncio.to_thread(_write, blocking, ours, op, where)


def _read(conn: _SyncConnection, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    check_table(jobs_table(conn), ours, where)
    return op(queries(conn))


async def aread_in(conn: object, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    """The async form of read_in, on a psycopg.AsyncConnection."""
    if not isinstance(conn, psycopg.AsyncConnection):
        raise _refused(conn, "AsyncConnection", where)
    async with _atuple_rows(conn) as tuples:
        blocking = cast("_SyncConnection", _Blocking(tuples, asyncio.get_running_loop()))
        return await asyncio.to_thread(_read, blocking, ours, op, where)
