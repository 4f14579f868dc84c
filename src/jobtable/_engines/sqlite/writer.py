"""The one writer connection of a SQLite file, and who commits on it (group commit).

Every write of a process goes through one connection, so writes never
contend inside the process and SQLite never answers SQLITE_BUSY to one of
our own threads. Whoever holds it (the leader) commits every operation
already waiting in one transaction: under load, many writes cost one fsync.

Who leads is a design decision (BENCHMARKS.md, "Group commit: who leads"). A
synchronous ``write`` that finds the writer idle leads: it runs its own
transaction in its own thread, so an uncontended write pays no hop to
another thread and back. Writes that arrive while a leader is busy queue
behind it. Once the leader has committed, it hands the writer on: to the
oldest synchronous write waiting, whose thread is woken to lead the next
batch (which holds its own write) instead of being woken later for its
result, or, when only asynchronous writes wait, to the writer thread, which
commits batches until nothing waits and then lets the writer go idle. A
caller that leads returns as soon as its own batch is committed: it never
serves a stream of others' writes. The synchronous callers of a committed
batch are woken one by one, each by the one before
(``jobtable._engines.wake_chain``). An asynchronous write never leads on the event
loop, since a commit waits for an fsync: it queues, and wakes the writer
thread to lead when the writer is idle; its result reaches the event loop
with one call_soon_threadsafe per batch.

How a batch commits, each write in its own savepoint, is
``jobtable._engines.sqlite.commit``.
"""

import asyncio
import collections
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from jobtable._engines import wake_chain
from jobtable._engines.base import Queries
from jobtable._engines.sqlite.commit import DONE, LEAD, Call, commit, resolve
from jobtable._engines.sqlite.text import Connection
from jobtable._engines.sqlite.wal_limit import WalLimit
from jobtable._engines.wake_chain import Waiter
from jobtable._errors import StoreError

T = TypeVar("T")

MAX_BATCH = 512
"""The most operations the writer commits in one transaction."""

_get_ident = threading.get_ident


class Writer:
    """The writer connection of one file and its group commit; safe from any thread.

    An operation runs in a transaction it shares with the others waiting at
    the time, inside its own savepoint (a lone one needs none): if it
    raises, its writes alone are rolled back and the exception reaches its
    caller; a sqlite3 error becomes a StoreError naming the file. A result
    is given only after COMMIT.
    """

    def __init__(
        self, path: Path, conn: Connection, queries: Queries, wal_limit: WalLimit | None = None
    ) -> None:
        """Takes over conn, an open writer connection, and starts the writer thread.

        With wal_limit, each commit is followed by its check (see ``WalLimit``).
        """
        self.path = path
        self.wal_limit = wal_limit
        self.connection = conn
        """The writer connection: only an operation may use it."""
        self._queries = queries
        self.commits = 0
        """How many transactions have committed: a signal for tests."""
        self._lock = threading.Lock()
        self._closed = False
        # The writes waiting, and whether someone leads (a thread holds the
        # connection, or was woken to lead). Both under _lock; while a write
        # waits, someone leads.
        self._pending: collections.deque[Call] = collections.deque()
        self._leading = False
        self._idle = threading.Condition(self._lock)
        # The thread running operations, while it runs them: 0 otherwise.
        self._op_thread = 0
        # Held while the writer thread sleeps; released once to wake it, to
        # lead (or, once _stopping, to exit).
        self._wake = threading.Lock()
        self._wake.acquire()
        self._stopping = False
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

        When no other write is under way, op runs in the calling thread; when
        one is, this thread may be woken to lead the batch that holds op.
        Refused from inside an operation.
        """
        self.refuse_in_op("write")
        call = Call(op)
        with self._lock:
            if self._closed:
                raise self._closed_error()
            if self._leading:
                call.waiter = Waiter()
                self._pending.append(call)
            else:
                self._leading = True
        if call.waiter is None:
            self._lead([call], call)
            return cast("T", call.result())
        self._wait(call)
        if call.state == LEAD:
            with self._lock:
                batch = self._take()
            self._lead(batch, call)
        return cast("T", call.result())

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        """Queues op for the writer thread; returns its result once committed.

        Cancelling the caller before op starts means op never runs; once it
        has started it still commits.
        """
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        call = Call(op, future)
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._pending.append(call)
            wake = not self._leading
            self._leading = True
        if wake:
            self._wake.release()
        return await future

    def refuse_in_op(self, doing: str) -> None:
        """Raises StoreError when called from inside an operation, where doing would deadlock."""
        if self._op_thread == _get_ident():
            raise self._inside(doing)

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
            self._stopping = True
        self._wake.release()
        self._thread.join()
        self.connection.close()

    def _inside(self, doing: str) -> StoreError:
        return StoreError(f"sqlite store {self.path}: {doing} called from inside a write operation")

    def _closed_error(self) -> StoreError:
        return StoreError(f"sqlite store {self.path}: the store is closed")

    def _wait(self, call: Call) -> None:
        """Waits until call's thread is woken, to lead or with call's outcome."""
        try:
            wake_chain.wait(cast("Waiter", call.waiter), self._lock)
        except BaseException:
            # Interrupted (KeyboardInterrupt): op still runs with its batch,
            # and if this thread was chosen to lead before it gave up its
            # place, the writer thread leads instead, so the writes behind
            # it are not stranded.
            with self._lock:
                if call.state == LEAD:
                    self._wake.release()
            raise

    def _take(self) -> list[Call]:
        """The writes waiting, oldest first, up to MAX_BATCH; called under _lock."""
        pending = self._pending
        if len(pending) <= MAX_BATCH:
            batch = list(pending)
            pending.clear()
            return batch
        return [pending.popleft() for _ in range(MAX_BATCH)]

    def _lead(self, batch: list[Call], own: Call) -> None:
        """Commits batch, which holds own (the caller's), hands the writer on, wakes the others."""
        try:
            self._run(batch)
        finally:
            with self._lock:
                if not self._go_idle() and not self._hand_to_waiter():
                    self._wake.release()
        self._deliver(batch, own)

    def _go_idle(self) -> bool:
        """Lets the writer go idle when no write waits; False when one does. Under _lock."""
        if self._pending:
            return False
        self._leading = False
        if self._closed:
            self._idle.notify_all()
        return True

    def _hand_to_waiter(self) -> bool:
        """Wakes the oldest synchronous write among the next batch to lead it; under _lock.

        False when none waits there: the writer thread is to lead.
        """
        for number, call in enumerate(self._pending):
            if number == MAX_BATCH:
                break
            waiter = call.waiter
            if waiter is not None and not waiter.gone:
                call.state = LEAD
                waiter.lock.release()
                return True
        return False

    def _write_loop(self) -> None:
        # Leads each time it is woken, until no write waits. What is already
        # waiting goes in one transaction, and it never waits for more: a
        # lone write commits at once.
        while True:
            self._wake.acquire()
            if self._stopping:
                return
            while True:
                with self._lock:
                    batch = self._take()
                self._run(batch)
                with self._lock:
                    idle = self._go_idle()
                self._deliver(batch, None)
                if idle:
                    break

    def _deliver(self, batch: list[Call], own: Call | None) -> None:
        """Wakes every write of batch but own with its outcome: threads (in turn), then loops."""
        by_loop: dict[asyncio.AbstractEventLoop, list[Call]] = {}
        waiters: list[Waiter] = []
        with self._lock:
            for call in batch:
                if call is own:
                    continue
                if call.future is not None:
                    by_loop.setdefault(call.future.get_loop(), []).append(call)
                elif call.waiter is not None:
                    call.state = DONE
                    waiters.append(call.waiter)
            wake_chain.wake_in_turn(waiters)
        for each_loop, calls in by_loop.items():
            # A loop already closed has no one left to tell.
            with contextlib.suppress(RuntimeError):
                each_loop.call_soon_threadsafe(resolve, calls)

    def _run(self, batch: list[Call]) -> None:
        """Runs and commits batch: each write gets its outcome (a cancelled awrite is skipped)."""
        calls = [c for c in batch if c.future is None or not c.future.cancelled()]
        if not calls:
            return
        self._op_thread = _get_ident()
        try:
            if commit(self.connection, self._queries, self.path, calls):
                self.commits += 1
                if self.wal_limit is not None:
                    self.wal_limit.after_commit(self.connection)
        finally:
            self._op_thread = 0
