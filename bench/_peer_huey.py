"""huey (SqliteHuey) as a peer on SQLite: its own consumer threads on a temporary file."""

import contextlib
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from bench import _db
from bench._peer_queue import Queue
from bench._plan import DEADLINE


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    """Restores the signal handlers a huey consumer replaces when it starts."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


class Huey(Queue):
    """SqliteHuey on a temporary file, its defaults kept (WAL; no synchronous set).

    With store_result the task returns a value, which huey stores; a task
    returning None stores nothing, and huey deletes a task's row when it
    dequeues it: it does less work per job than jobtable, which keeps every
    job's row and its outcome.
    """

    engine = "sqlite"

    def __init__(self, *, store_result: bool) -> None:
        from huey import SqliteHuey
        from huey import signals as huey_signals

        self.label = "huey, result stored" if store_result else "huey"
        self._dir = Path(tempfile.mkdtemp(prefix="jobtable-bench-huey-"))
        self.path = self._dir / "huey.db"
        self.huey = SqliteHuey("bench", filename=str(self.path))
        self._done = 0
        self._expected = 0
        self._all_done = threading.Event()
        self._lock = threading.Lock()

        def noop() -> object:
            return 1 if store_result else None

        self.task = self.huey.task(name="noop")(noop)

        def completed(signal_name: str, task: object) -> None:
            with self._lock:
                self._done += 1
                if self._done >= self._expected:
                    self._all_done.set()

        self.huey.signal(huey_signals.SIGNAL_COMPLETE)(completed)

    def synchronous(self) -> int:
        """huey's connection's PRAGMA synchronous (2: FULL, as jobtable's durable store)."""
        value = self.huey.storage.sql("PRAGMA synchronous", results=True)[0][0]
        return int(value)

    def enqueue_one(self, count: int) -> float:
        task = self.task
        begin = time.perf_counter()
        for _ in range(count):
            task()
        return time.perf_counter() - begin

    def drain(self, count: int, workers: int) -> float:
        with self._lock:
            self._done, self._expected = 0, count
            self._all_done.clear()
        consumer = self.huey.create_consumer(workers=workers, worker_type="thread")
        with _signals_kept():
            begin = time.perf_counter()
            consumer.start()
            finished = self._all_done.wait(DEADLINE)
            elapsed = time.perf_counter() - begin
            consumer.stop(graceful=True)
        if not finished:
            raise TimeoutError(f"huey ran {self._done} of {count} tasks")
        return elapsed

    def enqueue_threads(self, count: int, threads: int) -> float:
        task = self.task

        def work(share: int) -> None:
            for _ in range(share):
                task()

        return _db.run_threads(threads, lambda _, share: work(share), count)

    def clear(self) -> None:
        self.huey.flush()

    def close(self) -> None:
        self.huey.storage.close()
        shutil.rmtree(self._dir, ignore_errors=True)
