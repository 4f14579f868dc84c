"""DaemonPool: the threads plain ``def`` handlers run in, which never hold a process open.

``concurrent.futures.ThreadPoolExecutor`` (asyncio's default executor
included) joins its threads when the interpreter exits, so one handler
blocked for ever keeps a stopped worker process alive after ``run`` returned,
and a second Ctrl-C then interrupts that join inside ``threading``. A
runner that stops leaves such a job running for the next start to fail as
interrupted; its thread must not outlive the process, so these are daemon
threads.
"""

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_Work = tuple[concurrent.futures.Future[Any], Callable[[], Any]]


class DaemonPool(concurrent.futures.Executor):
    """Runs calls on up to max_workers daemon threads, started as calls need them.

    shutdown never waits for a call under way: the runner has given up on
    it, and the process may exit while it runs.
    """

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._shutdown = False

    def submit(
        self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[T]:
        """Schedules fn(*args, **kwargs); raises RuntimeError after shutdown."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._work.put((future, lambda: fn(*args, **kwargs)))
            if self._idle > 0:
                self._idle -= 1
            elif len(self._threads) < self._max_workers:
                thread = threading.Thread(
                    target=self._serve,
                    name=f"{self._prefix}_{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stops taking calls; the idle threads end. Never waits for a call under way.

        wait is accepted for the Executor interface and ignored: waiting is
        what this pool exists to avoid.
        """
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        work = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if work is not None:
                        work[0].cancel()
            for _ in self._threads:
                self._work.put(None)

    def _serve(self) -> None:
        while True:
            work = self._work.get()
            if work is None:
                return
            future, call = work
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except BaseException as err:
                    future.set_exception(err)
                else:
                    future.set_result(result)
            with self._lock:
                self._idle += 1
