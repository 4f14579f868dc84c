"""The one writer connection of a SQLite file, and who commits on it (group commit).

Every write of a process goes through one connection, so writes never
contend inside the process and SQLite never answers SQLITE_BUSY to one of
our own threads. Whoever holds it (the leader) commits every operation
already waiting in one transaction: under load, many writes cost one fsync.

Who leads is a design decision (BENCHMARKS.md, "Group commit: who leads"). A
synchronous ``write`` that finds the writer idle leads: it runs its own
transaction in its own thread, so an uncontended write pays no hop to
another thread and back. Writes that arrive while a leader is busy queue
behind it; once the leader has committed, it hands the writer to the writer
thread, which commits everything queued in one transaction and goes on
until nothing waits, then lets the writer go idle. The leader returns as
soon as its own batch is committed: it never serves a stream of others'
writes. An asynchronous write never leads on the event loop, since a commit
waits for an fsync: it queues, and wakes the writer thread to lead when the
writer is idle.

The only SQL here is transaction plumbing (BEGIN, SAVEPOINT, COMMIT) that
sqlc cannot express.
"""

import collections
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from jobtable._engine import Queries
from jobtable._errors import StoreError
from jobtable._sqlite_errors import driver_errors
from jobtable._sqlite_text import Connection

T = TypeVar("T")

MAX_BATCH = 512
"""The most operations the writer commits in one transaction."""


@dataclass(slots=True)
class _Call:
    op: Callable[[Queries], Any]
    future: Future[Any]


@dataclass(slots=True)
class _Outcome:
    call: _Call
    ok: bool
    value: Any


class Writer:
    """The writer connection of one file and its group commit; safe from any thread.

    An operation runs in a transaction it shares with the others waiting at
    the time, inside its own savepoint (a lone one needs none): if it
    raises, its writes alone are rolled back and the exception reaches its
    caller; a sqlite3 error becomes a StoreError naming the file. A result
    is given only after COMMIT.
    """

    def __init__(self, path: Path, conn: Connection, queries: Queries) -> None:
        """Takes over conn, an open writer connection, and starts the writer thread."""
        self.path = path
        self.connection = conn
        """The writer connection: only an operation may use it."""
        self._queries = queries
        self.commits = 0
        """How many transactions have committed: a signal for tests."""
        self._lock = threading.Lock()
        self._closed = False
        # The writes waiting, and whether someone leads (a thread holds the
        # connection, or the writer thread was woken to). Both under _lock;
        # while a write waits, someone leads.
        self._pending: collections.deque[_Call] = collections.deque()
        self._leading = False
        self._idle = threading.Condition(self._lock)
        # Set in the thread that runs a batch, while it runs it.
        self._local = threading.local()
        # Wakes the writer thread to lead (True) or to exit (None).
        self._wake: queue.SimpleQueue[bool | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._write_loop, name=f"jobtable-sqlite-writer {path.name}", daemon=True
        )
        self._thread.start()

    @property
    def pending(self) -> int:
        """How many writes wait for the writer: a signal for tests."""
        return len(self._pending)

    @property
    def closed(self) -> bool:
        """True once close has begun: no write is accepted any more."""
        return self._closed

    def write(self, op: Callable[[Queries], T]) -> T:
        """Runs op in a write transaction; returns its result once committed.

        When no other write is under way, op runs in the calling thread.
        Refused from inside an operation.
        """
        self.refuse_in_op("write")
        call = _Call(op, Future())
        if self._submit(call, lead=True):
            self._lead_once()
        return cast("T", call.future.result())

    def submit(self, op: Callable[[Queries], T]) -> "Future[T]":
        """Queues op for the writer thread; the future gives its result once committed.

        Cancelling the future before op starts means op never runs.
        """
        call = _Call(op, Future())
        self._submit(call, lead=False)
        return call.future

    def refuse_in_op(self, doing: str) -> None:
        """Raises StoreError when called from inside an operation, where doing would deadlock."""
        if getattr(self._local, "in_op", False):
            raise StoreError(
                f"sqlite store {self.path}: {doing} called from inside a write operation"
            )

    def close(self) -> None:
        """Commits the writes already queued, then closes the connection; again does nothing."""
        self.refuse_in_op("close")
        with self._lock:
            if self._closed:
                return
            self._closed = True
            # Whoever leads finishes the writes already queued first.
            while self._leading:
                self._idle.wait()
            self._wake.put(None)
        self._thread.join()
        self.connection.close()

    def _submit(self, call: _Call, *, lead: bool) -> bool:
        """Queues call; True when the caller is to lead (lead, and the writer was idle).

        Otherwise, if the writer was idle, wakes the writer thread to lead.
        """
        with self._lock:
            if self._closed:
                raise StoreError(f"sqlite store {self.path}: the store is closed")
            self._pending.append(call)
            if self._leading:
                return False
            self._leading = True
        if lead:
            return True
        self._wake.put(True)
        return False

    def _take(self) -> list[_Call]:
        """The writes waiting, oldest first, up to MAX_BATCH; called under _lock."""
        pending = self._pending
        return [pending.popleft() for _ in range(min(len(pending), MAX_BATCH))]

    def _lead_once(self) -> None:
        """Commits the writes waiting, the caller's own first, then hands the writer on."""
        try:
            with self._lock:
                batch = self._take()
            self._run_batch(batch)
        finally:
            with self._lock:
                if self._pending:
                    # Writes queued behind this batch: the writer thread leads
                    # on, and this caller returns now.
                    self._wake.put(True)
                else:
                    self._leading = False
                    self._idle.notify_all()

    def _write_loop(self) -> None:
        # Leads each time it is woken, until no write waits. What is already
        # waiting goes in one transaction, and it never waits for more: a
        # lone write commits at once.
        while self._wake.get():
            while True:
                with self._lock:
                    batch = self._take()
                    if not batch:
                        self._leading = False
                        self._idle.notify_all()
                        break
                self._run_batch(batch)

    def _run_batch(self, batch: list[_Call]) -> None:
        calls = [call for call in batch if call.future.set_running_or_notify_cancel()]
        if not calls:
            return
        self._local.in_op = True
        try:
            if len(calls) == 1:
                self._commit_one(calls[0])
            else:
                self._commit_batch(calls)
        finally:
            self._local.in_op = False

    def _commit_one(self, call: _Call) -> None:
        """A batch of one write: its own transaction, without a savepoint.

        If op raises, rolling back the transaction rolls back its writes
        alone, as the savepoint does in a shared batch.
        """
        conn = self.connection
        try:
            with driver_errors(self.path):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    with driver_errors(self.path):
                        value = conn.run(call.op, self._queries)
                except BaseException:
                    conn.finish_statements()
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        except BaseException as err:
            conn.finish_statements()
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            call.future.set_exception(err)
            return
        self.commits += 1
        call.future.set_result(value)

    def _commit_batch(self, calls: list[_Call]) -> None:
        conn = self.connection
        outcomes: list[_Outcome] = []
        try:
            with driver_errors(self.path):
                conn.execute("BEGIN IMMEDIATE")
                for call in calls:
                    conn.execute("SAVEPOINT jobtable_op")
                    try:
                        with driver_errors(self.path):
                            value = conn.run(call.op, self._queries)
                    except BaseException as exc:
                        outcomes.append(_Outcome(call, False, exc))
                        if not conn.in_transaction:
                            # SQLite rolled back the whole transaction (a
                            # full disk, an I/O error): the batch is lost.
                            raise StoreError(
                                f"sqlite store {self.path}: the transaction was rolled back: {exc}",
                                transient=True,
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
