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
  in its own thread, on a pooled connection (a lone enqueue stays one
  INSERT, one round trip);
- enqueues that arrive while one is under way queue; when the leader is
  done, it hands on to the committer thread, which stores everything
  queued with one statement and goes on until nothing waits, then goes idle
  so that the next lone caller leads again. The leader never commits
  others' writes, so its latency stays one commit;
- an asynchronous enqueue (``aenqueue``) queues and, when nothing is under
  way, wakes the committer thread, which runs a batch of one alone;
- the operations of a batch are called first, each adding its jobs to one
  ``JobRows``; then one INSERT of every row (CreateJobs, their JSON as one
  parameter) is sent on an autocommit connection: one round trip, its own
  transaction, one firing of the insert trigger. An operation that raises
  has its rows taken out and fails alone. When the server refuses the
  statement (which then stored nothing), each operation's rows are sent
  again alone: a failing enqueue fails alone and the others commit. A lost
  connection is not retried: every operation of the batch gets the
  StoreError, and whether they were kept is unknown, as for a lone write.

Only enqueues (``CreateJobs``) are batched: they insert and read nothing
back, so their rows can be gathered before any is sent. Claims, outcomes
and unique enqueues keep their own connections and are never held behind
an enqueue. A synchronous caller waits on a bare lock rather than a Future:
waking it is then C code, not Python the committer runs under the GIL. The
synchronous callers of a batch are woken one by one, each by the one before
(``jobtable._engines.wake_chain``).
"""

import collections
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar, cast

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines import wake_chain
from jobtable._engines.base import Insert
from jobtable._engines.postgres.job_rows import JobRows
from jobtable._engines.wake_chain import Waiter
from jobtable._errors import StoreError

T = TypeVar("T")
_Connection = psycopg.Connection[TupleRow]
_Op = Insert[Any]

MAX_BATCH = 256
"""The most operations one shared statement stores the jobs of."""

LANES = 1
"""The most transactions of enqueues under way at once.

Two were measured (the server running one's statements while the other
waits for its flush): no faster here, because the second lane commits at
once whatever little is waiting, which splits the waiting writes into
smaller transactions (BENCHMARKS.md, "Group commit on PostgreSQL").
"""


class _Call:
    """An operation in the queue, and how its caller hears the outcome."""

    __slots__ = ("op",)

    def __init__(self, op: _Op) -> None:
        self.op = op

    def start(self) -> bool:
        """False when the caller gave up on op (it must not run), else True."""
        return True

    def finish(self, value: Any) -> None:
        raise NotImplementedError

    def fail(self, err: BaseException) -> None:
        raise NotImplementedError


class _Waiting(_Call):
    """The call of a synchronous caller, which blocks on waiter until its outcome is set.

    A bare lock wakes the caller: cheaper for the committer than a Future's
    condition, which costs it Python code under the GIL for each caller it
    wakes.
    """

    __slots__ = ("_error", "_value", "waiter")

    def __init__(self, op: _Op) -> None:
        super().__init__(op)
        self._value: Any = None
        self._error: BaseException | None = None
        self.waiter = Waiter()

    def finish(self, value: Any) -> None:
        self._value = value

    def fail(self, err: BaseException) -> None:
        self._error = err

    def result(self) -> Any:
        """op's value, or raises its error; once waiter was woken."""
        if self._error is not None:
            raise self._error
        return self._value


class _Submitted(_Call):
    """The call of an asynchronous caller, which awaits future."""

    __slots__ = ("future",)

    def __init__(self, op: _Op) -> None:
        super().__init__(op)
        self.future: Future[Any] = Future()

    def start(self) -> bool:
        return self.future.set_running_or_notify_cancel()

    def finish(self, value: Any) -> None:
        self.future.set_result(value)

    def fail(self, err: BaseException) -> None:
        self.future.set_exception(err)


class GroupCommit:
    """Stores the jobs of concurrent enqueues with shared statements; safe from any thread.

    Each operation is an ``Insert``, whose ``insert`` is handed a
    ``JobRows``: the one query it may call is ``insert_jobs``. connection()
    lends a pooled autocommit connection; error(err) translates a psycopg
    error. A result is given only after the statement
    storing the operation's jobs committed.
    """

    def __init__(
        self,
        where: str,
        *,
        connection: Callable[[], contextlib.AbstractContextManager[_Connection]],
        error: Callable[[psycopg.Error], StoreError],
    ) -> None:
        self._where = where
        self._connection = connection
        self._error = error
        self.commits = 0
        """How many transactions this has committed: a signal for tests."""
        self._lock = threading.Lock()
        # The operations waiting, and how many lead (callers running their
        # own, committer threads woken): at most LANES. Both under _lock;
        # while an operation waits, someone leads.
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

    def write(self, op: Insert[T]) -> T:
        """Runs op and returns its result once committed: alone when nothing else is under way."""
        with self._lock:
            self._refuse_closed()
            if self._leaders == 0:
                self._leaders = 1
                call = None
            else:
                call = _Waiting(op)
                self._queue(call)
        if call is not None:
            wake_chain.wait(call.waiter, self._lock)
            return cast("T", call.result())
        try:
            rows = JobRows()
            value = op.insert(rows)
            if rows:
                self._store(rows)
            return value
        finally:
            with self._lock:
                self._leaders -= 1
                if self._pending:
                    self._add_leader()
                else:
                    self._idle.notify_all()

    def submit(self, op: Insert[T]) -> "Future[T]":
        """Queues op for a committer thread; the future gives its result once committed.

        Cancelling the future before op starts means op never runs.
        """
        call = _Submitted(op)
        with self._lock:
            self._refuse_closed()
            self._queue(call)
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

    def _queue(self, call: _Call) -> None:
        # Called under _lock.
        self._pending.append(call)
        self._add_leader()

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
        # goes in one statement; it never waits for more.
        while self._wake.get():
            while True:
                with self._lock:
                    pending = self._pending
                    batch = [pending.popleft() for _ in range(min(len(pending), MAX_BATCH))]
                    if not batch:
                        self._leaders -= 1
                        self._idle.notify_all()
                        break
                self._commit(batch)  # gives every call its outcome
                with self._lock:
                    wake_chain.wake_in_turn(
                        call.waiter for call in batch if isinstance(call, _Waiting)
                    )

    def _commit(self, batch: list[_Call]) -> None:
        # Each operation adds its jobs to one JobRows, which one statement
        # stores. An operation that raises has its jobs taken out again and
        # fails alone. When the server refuses the statement, which then
        # stored nothing, each operation's jobs are stored alone, so that
        # the one at fault fails alone.
        rows = JobRows()
        added: list[tuple[_Call, Any, int]] = []
        for call in batch:
            if not call.start():
                continue
            start = len(rows)
            try:
                value = call.op.insert(rows)
            except BaseException as err:
                rows.truncate(start)
                call.fail(err)
            else:
                added.append((call, value, start))
        ends = [start for _, _, start in added[1:]] + [len(rows)]
        try:
            self._store(rows, shared=len(added) > 1)
        except _Refused:
            for (call, value, start), end in zip(added, ends, strict=True):
                try:
                    self._store(rows.part(start, end))
                except BaseException as err:
                    call.fail(err)
                else:
                    call.finish(value)
            return
        except BaseException as err:
            for call, _, _ in added:
                call.fail(err)
            return
        for call, value, _ in added:
            call.finish(value)

    def _store(self, rows: JobRows, *, shared: bool = False) -> None:
        """Stores rows with one statement on a pooled connection, as its own transaction.

        Raises StoreError when the pool lends no connection, the server
        refuses a row or the connection is lost; but _Refused when the server
        refused shared rows (several operations' jobs) on a connection still
        working: the statement stored nothing, and each operation's jobs may
        be stored apart.
        """
        if not rows:
            return
        try:
            with self._connection() as conn:
                try:
                    rows.store(conn)
                except psycopg.Error as err:
                    if shared and not conn.broken:
                        raise _Refused from err
                    raise
        except psycopg.Error as err:  # the connection, lent or lost
            raise self._error(err) from err
        self.commits += 1


class _Refused(Exception):
    """The server refused a shared statement, which stored nothing: store each operation apart."""
