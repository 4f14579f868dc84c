"""A write on an application's own sqlite3 connection to the store's file, in its transaction.

An enqueue with ``conn=`` runs its operation (CreateJob, CreateUniqueJobs,
...) through the generated Querier on the caller's connection, so its
inserts commit or roll back with the caller's transaction, as
the caller's connection is set to (its synchronous pragma, not the store's
durable setting, decides what a commit costs). Runners see the commit
through the WAL like any other process's (``WalWatcher``), or at their
next poll.

The only SQL here is what sqlc cannot express: PRAGMA database_list, which
names the connection's file, and the BEGIN and SAVEPOINT that keep an
operation of several statements all or none.
"""

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from jobtable._engines.base import Queries, Statement
from jobtable._engines.sqlite.queries import queries as _queries

T = TypeVar("T")

_SAVEPOINT = "jobtable_enqueue"


def _main_file(conn: sqlite3.Connection) -> str:
    """The file of conn's main database ('' for one in memory or temporary)."""
    cursor = conn.cursor()
    cursor.row_factory = None  # whatever the caller's factory, rows are tuples here
    try:
        rows = cursor.execute("PRAGMA database_list").fetchall()
    finally:
        cursor.close()
    return next((str(file) for _, name, file in rows if name == "main"), "")


def _same_file(file: str, path: Path) -> bool:
    try:
        return bool(file) and os.path.samefile(file, path)
    except OSError:
        return False


def _begins_implicitly(conn: sqlite3.Connection) -> bool:
    """Whether sqlite3 itself would BEGIN before conn's next INSERT (legacy transaction control).

    Python 3.12's ``autocommit`` attribute, when set to True or False, turns
    that off (False keeps a transaction always open).
    """
    legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)
    return getattr(conn, "autocommit", legacy) == legacy and conn.isolation_level is not None


def _checked(path: Path, conn: object, where: str) -> sqlite3.Connection:
    """conn, once it proved to be a sqlite3.Connection whose main database is path."""
    if not isinstance(conn, sqlite3.Connection):
        raise TypeError(
            f"{where}: the store is SQLite: conn must be a sqlite3.Connection to its file, or a "
            f"SQLAlchemy Connection or Session on one; got "
            f"{type(conn).__module__}.{type(conn).__qualname__}"
        )
    file = _main_file(conn)
    if not _same_file(file, path):
        raise ValueError(
            f"{where}: conn is a connection to {file or 'a database in memory'!r}, "
            f"not to the store's file {str(path)!r}"
        )
    return conn


def read_in(path: Path, conn: object, op: Callable[[Queries], T], where: str) -> T:
    """Runs op, which only reads, on conn, in its transaction; conn must open path."""
    return op(_queries(_checked(path, conn, where)))


def write_in(path: Path, conn: object, op: Callable[[Queries], T], where: str) -> T:
    """Runs the write op on conn, in its transaction; conn must open the file at path.

    Raises TypeError for a conn that is no sqlite3.Connection and ValueError
    for one whose main database is another file; a sqlite3 error reaches the
    caller. An op of several statements runs in a savepoint of the caller's
    transaction, so an error in it leaves none of its writes; on a
    connection that autocommits, that savepoint is a transaction of its own,
    committed at once.
    """
    conn = _checked(path, conn, where)
    q = _queries(conn)
    one_statement = isinstance(op, Statement)
    if one_statement:
        return op(q)  # one statement: atomic on its own
    if not conn.in_transaction and _begins_implicitly(conn):
        # What sqlite3 would run before the first INSERT anyway: a SAVEPOINT
        # outside a transaction would begin one that its RELEASE commits.
        conn.execute(f"BEGIN {conn.isolation_level}")
    conn.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        result = op(q)
    except BaseException:
        conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
        conn.execute(f"RELEASE {_SAVEPOINT}")
        raise
    conn.execute(f"RELEASE {_SAVEPOINT}")
    return result
