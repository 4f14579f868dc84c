"""Every wait for a job's outcome in one process, for one store: a registry of futures by id.

A wait adds a future for its job id; one thread per store checks the
waited-for jobs with one query (``GetJobs``, in chunks) and settles the
futures of those that ended. It checks the jobs a commit may have ended as
the engine tells of it (``EndedJobs``: PostgreSQL's NOTIFY names them;
SQLite's WAL watch says only that the file changed), a wait's job when the
wait is added, and every waited-for job every ``poll`` seconds, on a fixed
schedule that no wake moves: the safety net for an end no notification
tells of. So a wait returns at most ``poll`` seconds (and one check) after
its job's end commits, however busy the process is, and a thousand waits
share one listening connection (or one file watch) and cost no connection
while they wait.

The thread starts with the first wait and listens before its first check,
so no end committed after a wait's check goes unseen; it stops listening and
ends after ``IDLE_POLLS`` polls without a wait or a watch.

A watch (``watch``, for a stream of a job's progress) shares the listener:
its wake-up is called whenever a notification may concern its job (a
publish notifies on PostgreSQL; on SQLite every commit to the file does),
and the watcher reads the job itself.
"""

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from weakref import WeakKeyDictionary

from jobtable._engines.base import EndedJobs, Engine, Queries
from jobtable._engines.rows import JobRow
from jobtable._errors import JobNotFound, StoreError

ENDED = frozenset({"succeeded", "failed", "cancelled"})
"""The statuses a job ends in: a wait returns once its job has one."""

POLL = 1.0
"""Seconds between two checks of every waited-for job, whatever wakes come between them."""

IDLE_POLLS = 30
"""Polls without a wait after which the thread stops listening and ends."""

CHUNK = 500
"""The most job ids one check query names."""

_logger = logging.getLogger("jobtable.wait")


class GetJobs:
    """The read of the jobs with ids; an id no job has gives no row."""

    __slots__ = ("ids",)

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids

    def __call__(self, q: Queries) -> Sequence[JobRow]:
        return q.get_jobs(ids=self.ids)


def _settle(futures: set[Future[JobRow]], row: JobRow | None, error: Exception | None) -> None:
    for future in futures:
        # A future its wait gave up on (timed out, cancelled) is done already.
        with contextlib.suppress(InvalidStateError):
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(row)  # type: ignore[arg-type]


class Waiters:
    """The waits of one process for the jobs of one engine; safe from any thread.

    ``add`` registers a wait and returns its future, settled with the job's
    row once the job has ended, with JobNotFound once the job is gone, or
    with a StoreError that no retry mends; ``discard`` unregisters it.
    """

    def __init__(self, engine: Engine, *, poll: float = POLL) -> None:
        self.poll = poll
        """Seconds between two checks of every waited-for job (tests lengthen it)."""
        self._engine = engine
        self._lock = threading.Lock()
        self._futures: dict[str, set[Future[JobRow]]] = {}
        self._odd: set[str] = set()  # waited-for ids a notification cannot name (a newline)
        self._due: set[str] | None = set()  # to check next; None: every one
        self._watches: dict[str, set[Callable[[], None]]] = {}
        self._woken = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = False
        """True while the thread listens for ends (for tests and diagnostics)."""
        # Whether the store failed the last check (a transient error): the
        # first such check of an outage is a warning, the others DEBUG.
        self._unreachable = False

    def __len__(self) -> int:
        """How many job ids have a wait."""
        with self._lock:
            return len(self._futures)

    def add(self, job_id: str) -> "Future[JobRow]":
        """Registers a wait for job_id and returns its future; the job is checked soon."""
        future: Future[JobRow] = Future()
        with self._lock:
            self._futures.setdefault(job_id, set()).add(future)
            if "\n" in job_id:
                self._odd.add(job_id)
            if self._due is not None:
                self._due.add(job_id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jobtable-wait", daemon=True)
                self._thread.start()
        self._woken.set()
        return future

    def watch(self, job_id: str, wake: Callable[[], None]) -> None:
        """Calls wake (from the waiting thread; it must not block) when job_id may have changed.

        That is when a notification names the job or names none; the thread
        listens as long as a watch or a wait remains. ``unwatch`` ends it.
        """
        with self._lock:
            self._watches.setdefault(job_id, set()).add(wake)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jobtable-wait", daemon=True)
                self._thread.start()

    def unwatch(self, job_id: str, wake: Callable[[], None]) -> None:
        """Ends the watch of wake for job_id; again does nothing."""
        with self._lock:
            wakes = self._watches.get(job_id)
            if wakes is not None:
                wakes.discard(wake)
                if not wakes:
                    del self._watches[job_id]

    def _wake_watches(self, ids: str) -> None:
        with self._lock:
            if not self._watches:
                return
            if not ids or any("\n" in i for i in self._watches):
                wakes = [w for ws in self._watches.values() for w in ws]
            else:
                named = ids.split("\n")
                wakes = [w for i in named for w in self._watches.get(i, ())]
        for wake in wakes:
            try:
                wake()
            except Exception:  # a watcher's bug must not stop the waits
                _logger.exception("waiting for jobs: a watch's wake-up failed")

    def discard(self, job_id: str, future: "Future[JobRow]") -> None:
        """Unregisters the wait of future for job_id; again does nothing."""
        with self._lock:
            futures = self._futures.get(job_id)
            if futures is not None:
                futures.discard(future)
                if not futures:
                    del self._futures[job_id]
                    self._odd.discard(job_id)

    def notified(self, ids: str) -> None:
        """Checks the waited-for jobs among ids (one a line), or every one for ""."""
        self._wake_watches(ids)
        with self._lock:
            if not ids:
                self._due = None
            elif self._due is not None:
                due = [i for i in ids.split("\n") if i in self._futures]
                if not due and not self._odd:
                    return
                self._due.update(due, self._odd)
        self._woken.set()

    def _listen(self) -> Callable[[], None] | None:
        if not isinstance(self._engine, EndedJobs):
            return None
        try:
            return self._engine.listen_ended(self.notified)
        except StoreError as err:
            _logger.warning("waiting for jobs by polling only: %s", err)
            return None

    def _run(self) -> None:
        stop: Callable[[], None] | None = None
        idle = 0
        try:
            stop = self._listen()
            self.listening = stop is not None
            # A watch added before the listener listened may have missed a
            # change: its watcher reads again now.
            self._wake_watches("")
            polled = time.monotonic()
            while True:
                # A deadline, not an idle timer: wakes that keep coming (a
                # busy process's notifications and new waits) never put the
                # next check of every waited-for job off.
                self._woken.wait(max(0.0, polled + self.poll - time.monotonic()))
                poll = time.monotonic() >= polled + self.poll
                if poll:
                    polled = time.monotonic()
                with self._lock:
                    self._woken.clear()
                    due, self._due = self._due, set()
                    if not self._futures:
                        if self._watches:
                            idle = 0
                        elif poll:
                            idle += 1
                        if idle >= IDLE_POLLS:
                            self._thread = None  # under the lock: an add now starts another
                            return
                        continue
                    idle = 0
                    if due is None or poll:
                        due = set(self._futures)
                    ids = [i for i in due if i in self._futures]
                self._check(ids)
        except Exception:  # a bug: log it; the next wait starts a new thread
            _logger.exception("waiting for jobs: the checking thread failed")
        finally:
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None
                if self._thread is None:  # else a newer thread's flag
                    self.listening = False
            if stop is not None:
                stop()

    def _check(self, ids: list[str]) -> None:
        """Reads the jobs with ids and settles the waits of those that ended or are gone."""
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            failure: StoreError | None = None
            try:
                rows = {row.id: row for row in self._engine.read(GetJobs(chunk))}
            except StoreError as err:
                if err.transient:  # the next poll tries again
                    level = logging.DEBUG if self._unreachable else logging.WARNING
                    _logger.log(level, "waiting for jobs: cannot check them yet: %s", err)
                    self._unreachable = True
                    return
                rows, failure = {}, err
            if self._unreachable:
                self._unreachable = False
                _logger.info("waiting for jobs: the store answers again")
            settled = []
            with self._lock:
                for job_id in chunk:
                    row = rows.get(job_id)
                    if row is None or row.status in ENDED:
                        self._odd.discard(job_id)
                        settled.append((job_id, row, self._futures.pop(job_id, set())))
            # Outside the lock: a future's callbacks may add or discard waits.
            for job_id, row, futures in settled:
                gone = JobNotFound(f"job {job_id!r} not found") if failure is None else failure
                _settle(futures, row, None if row is not None else gone)


_registries: "WeakKeyDictionary[object, Waiters]" = WeakKeyDictionary()
_registries_lock = threading.Lock()


def waiters_of(owner: object, engine: Engine) -> Waiters:
    """The one Waiters of owner (a store), made on first use over its engine."""
    with _registries_lock:
        waiters = _registries.get(owner)
        if waiters is None:
            waiters = _registries[owner] = Waiters(engine)
        return waiters
