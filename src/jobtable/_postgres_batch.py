"""Group commit of concurrent enqueues on PostgreSQL (issue 18).

A web app enqueues from many threads or tasks at once. Each enqueue on a
connection of its own commits alone, and those commits barely overlap on the
server: a transaction that notifies (the insert trigger's ``pg_notify``)
holds a database-wide lock from before its commit until after its WAL flush,
so enqueues commit one after the other whatever the number of connections.
So concurrent enqueues share transactions instead, as on SQLite.

Who commits what is a design decision (BENCHMARKS.md, "Group commit on
PostgreSQL"):

- a synchronous write that finds no enqueue under way leads: it runs alone,
  in its own thread, on a pooled connection, as it did before group commit
  (a lone enqueue stays one INSERT, one round trip);
- enqueues that arrive while one is under way queue; when the leader is
  done, it hands on to the committer thread, which commits everything
  queued in one transaction and goes on until nothing waits, then goes idle
  so that the next lone caller leads again. The leader never commits
  others' writes, so its latency stays one commit;
- an asynchronous enqueue (``aenqueue``) queues and, when nothing is under
  way, wakes the committer thread, which runs a batch of one alone;
- a batch of several is sent in pipeline mode: BEGIN, every operation's
  statements and COMMIT go out without waiting for a reply, and the server
  answers once. Savepoints would not isolate a failure there (a pipeline
  skips everything after an error up to its end), so when the server
  refuses any statement, or an operation raises, the transaction is rolled
  back whole and each operation runs again alone, as it would have without
  group commit: a failing one fails alone and the others commit. A lost
  connection is not retried: every operation of the batch gets the
  StoreError, and whether they were kept is unknown, as for a lone write.

Only operations that read nothing back may be batched: in pipeline mode a
statement's result (its row count included) is not there until the server
answers, which is after the operation returned. The engine batches only
``CreateJobs``, which inserts and reads nothing; claims and outcomes keep
their own connections and are never held behind an enqueue.
"""

import collections
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow

from jobtable._engine import Queries
from jobtable._errors import StoreError

T = TypeVar("T")
_Connection = psycopg.Connection[TupleRow]
_Op = Callable[[Queries], Any]

MAX_BATCH = 256
"""The most operations one group transaction commits."""

LANES = 1
"""The most transactions of enqueues under way at once.

Two were measured (the server running one's statements while the other
waits for its flush): no faster here, because the second lane commits at
once whatever little is waiting, which splits the waiting writes into
smaller transactions (BENCHMARKS.md, "Group commit on PostgreSQL").
"""


@dataclass(slots=True)
class _Call:
    op: _Op
    future: Future[Any]


class _RunAlone(Exception):
    """The group transaction was rolled back and committed nothing: run each op alone."""


class GroupCommit:
    """Commits concurrent operations in shared transactions; safe from any thread.

    alone(op) runs one operation in a transaction of its own and raises
    StoreError for a database error (the engine's ordinary write);
    connection() lends a pooled autocommit connection; queries(conn) gives
    the operations their ``Queries`` on it; error(err, doing) translates a
    psycopg error. A result is given only after its transaction committed.
    """

    def __init__(
        self,
        where: str,
        *,
        alone: Callable[[_Op], Any],
        connection: Callable[[], contextlib.AbstractContextManager[_Connection]],
        queries: Callable[[_Connection], Queries],
        error: Callable[[psycopg.Error], StoreError],
    ) -> None:
        self._where = where
        self._alone = alone
        self._connection = connection
        self._queries = queries
        self._error = error
        self.commits = 0
        """How many transactions this has committed: a signal for tests."""
        self._lock = threading.Lock()
        # The operations waiting, and how many lead (callers running their
        # own alone, committer threads woken): at most LANES. Both under
        # _lock; while an operation waits, someone leads.
        self._pending: collections.deque[_Call] = collections.deque()
        self._leaders = 0
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self._wake: queue.SimpleQueue[bool | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    @property
    def pending(self) -> int:
        """How many operations wait for a group transaction: a signal for tests."""
        return len(self._pending)

    def write(self, op: Callable[[Queries], T]) -> T:
        """Runs op and returns its result once committed: alone when nothing else is under way."""
        with self._lock:
            self._refuse_closed()
            if self._leaders == 0:
                self._leaders = 1
                call = None
            else:
                call = _Call(op, Future())
                self._pending.append(call)
                self._add_leader()
        if call is not None:
            return cast("T", call.future.result())
        try:
            value = cast("T", self._alone(op))
            self.commits += 1
            return value
        finally:
            with self._lock:
                self._leaders -= 1
                if self._pending:
                    self._add_leader()
                else:
                    self._idle.notify_all()

    def submit(self, op: Callable[[Queries], T]) -> "Future[T]":
        """Queues op for a committer thread; the future gives its result once committed.

        Cancelling the future before op starts means op never runs.
        """
        call = _Call(op, Future())
        with self._lock:
            self._refuse_closed()
            self._pending.append(call)
            self._add_leader()
        return call.future

    def close(self) -> None:
        """Commits the operations queued and refuses new ones; again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while self._leaders:
                self._idle.wait()
            threads = list(self._threads)
        for _ in threads:
            self._wake.put(None)
        for thread in threads:
            thread.join()

    def _refuse_closed(self) -> None:
        if self._closed:
            raise StoreError(f"postgres store {self._where}: the store is closed")

    def _add_leader(self) -> None:
        # Called under _lock with operations waiting: wakes a committer
        # thread unless LANES already lead, starting the threads the first
        # time.
        if self._leaders >= LANES:
            return
        self._leaders += 1
        if not self._threads:
            for lane in range(LANES):
                thread = threading.Thread(
                    target=self._commit_loop,
                    name=f"jobtable-postgres-group-commit-{lane}",
                    daemon=True,
                )
                thread.start()
                self._threads.append(thread)
        self._wake.put(True)

    def _commit_loop(self) -> None:
        # Leads each time it is woken, until nothing waits. What is waiting
        # goes in one transaction; it never waits for more.
        while self._wake.get():
            while True:
                with self._lock:
                    pending = self._pending
                    batch = [pending.popleft() for _ in range(min(len(pending), MAX_BATCH))]
                    if not batch:
                        self._leaders -= 1
                        self._idle.notify_all()
                        break
                self._commit(batch)

    def _commit(self, batch: list[_Call]) -> None:
        calls = [call for call in batch if call.future.set_running_or_notify_cancel()]
        if len(calls) > 1:
            try:
                values = self._together([call.op for call in calls])
            except _RunAlone:
                pass  # each below, in a transaction of its own
            except BaseException as err:
                for call in calls:
                    call.future.set_exception(err)
                return
            else:
                self.commits += 1
                for call, value in zip(calls, values, strict=True):
                    call.future.set_result(value)
                return
        for call in calls:
            try:
                value = self._alone(call.op)
            except BaseException as err:
                call.future.set_exception(err)
            else:
                self.commits += 1
                call.future.set_result(value)

    def _together(self, ops: list[_Op]) -> list[Any]:
        """Runs ops in one pipelined transaction; raises _RunAlone when it committed nothing.

        Raises StoreError when the pool lends no connection or the
        connection is lost: then nothing is run again.
        """
        try:
            with self._connection() as conn:
                try:
                    # BEGIN, the statements and COMMIT go out without waiting
                    # for replies, and the server answers them all at the
                    # end: one round trip. (psycopg's own transaction block
                    # would wait for the server after BEGIN and again after
                    # COMMIT.)
                    with conn.pipeline():
                        conn.execute("BEGIN")
                        q = self._queries(conn)
                        values = [op(q) for op in ops]
                        conn.execute("COMMIT")
                    return values
                except psycopg.Error as err:
                    if err.sqlstate is None or conn.broken:
                        raise  # no answer from the server: the commit's fate is unknown
                    _roll_back(conn)
                    raise _RunAlone from err
                except Exception as err:
                    _roll_back(conn)
                    raise _RunAlone from err
        except psycopg.Error as err:  # the connection, lent or lost
            raise self._error(err) from err


def _roll_back(conn: _Connection) -> None:
    """Ends conn's failed or open transaction; a connection that cannot is closed by the pool."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK")
