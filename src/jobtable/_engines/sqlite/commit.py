"""How a batch of writes commits on the writer connection of a SQLite file.

The writer (``jobtable._engines.sqlite.writer``) decides who runs a batch; this
runs it. Each write runs in its own savepoint, so one that raises rolls back
alone, and a batch of one runs without a savepoint: rolling back its
transaction rolls back its writes alone. Outcomes are set on each call and
read by the writer only once the batch is over, so no caller sees a result
before COMMIT. The only SQL here is transaction plumbing (BEGIN, SAVEPOINT,
COMMIT) that sqlc cannot express.
"""

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from jobtable._engines.base import Queries
from jobtable._engines.sqlite.errors import store_error
from jobtable._engines.sqlite.text import Connection
from jobtable._engines.wake_chain import Waiter
from jobtable._errors import StoreError

_execute = sqlite3.Connection.execute
"""Runs transaction plumbing, which has no parameters and leaves no statement open."""

# What a synchronous write waiting in the queue is woken for.
WAITING, LEAD, DONE = 0, 1, 2


class Call:
    """One write on its way: the op, then its outcome once its batch is over.

    ok and value are read only after the batch committed or failed. A
    synchronous write waiting behind a leader has waiter, which wakes its
    thread when it is to go on (to lead, or with its outcome, as state
    says); an asynchronous one has future, resolved on its event loop.
    """

    __slots__ = ("future", "ok", "op", "state", "value", "waiter")

    def __init__(
        self,
        op: Callable[[Queries], Any],
        future: "asyncio.Future[Any] | None" = None,
    ) -> None:
        self.op = op
        self.future = future
        self.waiter: Waiter | None = None
        self.state = WAITING
        self.ok = False
        self.value: Any = None

    def result(self) -> Any:
        """Returns the result, or raises the exception, the batch gave op."""
        if self.ok:
            return self.value
        raise cast("BaseException", self.value)


def resolve(calls: list[Call]) -> None:
    """Gives each asynchronous call its outcome, on its event loop."""
    for call in calls:
        future = cast("asyncio.Future[Any]", call.future)
        if future.done():  # cancelled while its batch ran
            continue
        if call.ok:
            future.set_result(call.value)
        else:
            future.set_exception(call.value)


def commit(conn: Connection, queries: Queries, path: Path, calls: list[Call]) -> bool:
    """Runs calls in one transaction on conn and commits it; True when it committed.

    Every call gets its outcome: its result, its own exception (a sqlite3
    error as a StoreError naming path), or, when the batch failed, the
    batch's cause.
    """
    if len(calls) == 1:
        return _commit_one(conn, queries, path, calls[0])
    return _commit_batch(conn, queries, path, calls)


def _failure(path: Path, err: BaseException) -> BaseException:
    """err as its caller gets it: a sqlite3 error becomes a StoreError naming path."""
    if isinstance(err, sqlite3.Error):
        error = store_error(path, err)
        error.__cause__ = err
        return error
    return err


def _abandon(conn: Connection) -> None:
    """Ends the statements and the transaction of a batch that failed."""
    conn.finish_statements()
    with contextlib.suppress(sqlite3.Error):
        if conn.in_transaction:
            _execute(conn, "ROLLBACK")


def _commit_one(conn: Connection, queries: Queries, path: Path, call: Call) -> bool:
    """A batch of one write: its own transaction, without a savepoint.

    If op raises, rolling back the transaction rolls back its writes
    alone, as the savepoint does in a shared batch.
    """
    try:
        _execute(conn, "BEGIN IMMEDIATE")
        value = call.op(queries)
        conn.finish_statements()
        _execute(conn, "COMMIT")
    except BaseException as err:
        _abandon(conn)
        call.value = _failure(path, err)
        return False
    call.ok = True
    call.value = value
    return True


def _commit_batch(conn: Connection, queries: Queries, path: Path, calls: list[Call]) -> bool:
    try:
        _execute(conn, "BEGIN IMMEDIATE")
        for call in calls:
            _execute(conn, "SAVEPOINT jobtable_op")
            try:
                value = call.op(queries)
                conn.finish_statements()
            except BaseException as exc:
                conn.finish_statements()
                call.value = failure = _failure(path, exc)
                if not conn.in_transaction:
                    # SQLite rolled back the whole transaction (a full disk,
                    # an I/O error): the batch is lost.
                    raise StoreError(
                        f"sqlite store {path}: the transaction was rolled back: {failure}",
                        transient=True,
                    ) from failure
                _execute(conn, "ROLLBACK TO jobtable_op")
                _execute(conn, "RELEASE jobtable_op")
            else:
                _execute(conn, "RELEASE jobtable_op")
                call.ok = True
                call.value = value
        _execute(conn, "COMMIT")
    except BaseException as err:
        _abandon(conn)
        # An op that raised keeps its own exception; every other op of the
        # batch had writes that were not committed, and gets the cause.
        batch_error = _failure(path, err)
        for call in calls:
            if call.ok or call.value is None:
                call.ok = False
                call.value = batch_error
        return False
    return True
