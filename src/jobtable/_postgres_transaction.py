"""An enqueue on an application's own psycopg connection, inside its transaction.

The insert runs the generated CreateJob / CreateJobs on the caller's
connection, so it commits or rolls back with the caller's transaction, and
the jobs table's insert trigger queues the NOTIFY that wakes runners in the
same transaction: PostgreSQL delivers it at commit, never after a rollback.
The caller's connection must reach the store's jobs table: the same server
and database, with the store's schema first on its search_path for the
unqualified name ``jobs``; GetJobsTable proves it before anything is
inserted.
"""

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow, tuple_row

from jobtable._engine import NewJob, Queries
from jobtable._postgres_queries import create_jobs_params, queries
from jobtable.db.postgres import jobs, transaction
from jobtable.db.postgres.transaction import GetJobsTableRow

T = TypeVar("T")

JobsTable = GetJobsTableRow
"""Which jobs table a session's unqualified ``jobs`` names: server, database, oid, schema."""


def jobs_table(conn: psycopg.Connection[TupleRow]) -> JobsTable:
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


def _alone(status: TransactionStatus, autocommit: bool, count: int) -> bool:
    """Whether several jobs need a transaction of their own to be stored all or none.

    Only when the connection autocommits and no transaction is open: psycopg
    sends a batch in one pipeline, which the server runs as one implicit
    transaction, but without pipeline mode (an older libpq) each statement
    would commit on its own. A lone INSERT is atomic anyway.
    """
    return count > 1 and autocommit and status == TransactionStatus.IDLE


def _refused(conn: object, want: str, where: str) -> TypeError:
    """The error for a conn that is not of the psycopg class want (or its SQLAlchemy forms)."""
    sqlalchemy = (
        "AsyncConnection or AsyncSession"
        if want == "AsyncConnection"
        else ("Connection or Session")
    )
    return TypeError(
        f"{where}: the store is PostgreSQL: conn must be a psycopg.{want}, or a "
        f"SQLAlchemy {sqlalchemy} on psycopg; got {type(conn).__module__}.{type(conn).__qualname__}"
    )


@contextlib.contextmanager
def _tuple_rows(conn: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[TupleRow]]:
    """conn reading rows as tuples, as the generated code does; its own factory comes back after."""
    saved = conn.row_factory
    conn.row_factory = tuple_row
    try:
        yield cast("psycopg.Connection[TupleRow]", conn)
    finally:
        conn.row_factory = saved


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


def read_in(conn: object, ours: JobsTable, op: Callable[[Queries], T], where: str) -> T:
    """Runs op, which only reads, on conn, in its transaction, once conn proved to reach ours."""
    if not isinstance(conn, psycopg.Connection):
        raise _refused(conn, "Connection", where)
    with _tuple_rows(conn) as tuples:
        check_table(jobs_table(tuples), ours, where)
        return op(queries(tuples))


def enqueue_in(
    conn: object,
    ours: JobsTable,
    kind: str,
    new_jobs: Sequence[NewJob],
    now: str,
    where: str,
) -> None:
    """Inserts new_jobs as queued jobs of kind on conn, in its transaction.

    ours is the store's jobs table. Raises TypeError for a conn that is
    no psycopg.Connection, ValueError when it does not reach ours; a
    psycopg error reaches the caller.
    """
    if not isinstance(conn, psycopg.Connection):
        raise _refused(conn, "Connection", where)
    with _tuple_rows(conn) as tuples:
        check_table(jobs_table(tuples), ours, where)
        q = queries(tuples)
        if _alone(tuples.info.transaction_status, tuples.autocommit, len(new_jobs)):
            with tuples.transaction():
                q.insert_jobs(kind=kind, jobs=new_jobs, now=now)
        else:
            q.insert_jobs(kind=kind, jobs=new_jobs, now=now)


async def aenqueue_in(
    conn: object,
    ours: JobsTable,
    kind: str,
    new_jobs: Sequence[NewJob],
    now: str,
    where: str,
) -> None:
    """The async form of enqueue_in, on a psycopg.AsyncConnection; ours is the store's table."""
    if not isinstance(conn, psycopg.AsyncConnection):
        raise _refused(conn, "AsyncConnection", where)
    async with _atuple_rows(conn) as tuples:
        row = await transaction.AsyncQuerier(tuples).get_jobs_table()
        assert row is not None  # a SELECT without FROM returns its one row
        check_table(row, ours, where)
        q = jobs.AsyncQuerier(tuples)
        params = create_jobs_params(kind, new_jobs, now)
        if _alone(tuples.info.transaction_status, tuples.autocommit, len(new_jobs)):
            async with tuples.transaction():
                await q.create_jobs(params)
        else:
            await q.create_jobs(params)
