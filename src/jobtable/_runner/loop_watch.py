"""The loop watch: names the async handler that blocks the runner's event loop.

An ``async def`` handler that calls a blocking function (``time.sleep``, sync
I/O, long CPU work) stops every other job, the claims, the heartbeat and the
cancels of the runner with it, and asyncio's debug mode, which would say so,
costs too much to leave on. A callback on the loop notes the time a few
times per threshold instead, and a thread of its own reads the note.
"""

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from jobtable._engines.rows import ClaimedRow
from jobtable._runner.shared import JobLogger

Attempts = Callable[[], list[tuple[ClaimedRow, "asyncio.Task[Any]"]]]
"""The attempts under way with their tasks, read from the watch's thread."""


class LoopWatch:
    """Warns, naming the job, when an async handler holds the event loop over threshold seconds.

    Once per stall: when the loop's last beat is older than threshold, the
    attempt whose task runs on the loop at that moment is logged as a
    warning with its job's id, kind and attempt. A stall in no handler (the
    runner's own code, another task of the application) is logged at debug
    level only. Costs one callback on the loop every quarter threshold.
    """

    def __init__(self, logger: logging.Logger, threshold: float, attempts: Attempts) -> None:
        self._logger = logger
        self._threshold = threshold
        self._interval = threshold / 4
        self._attempts = attempts
        self._loop: asyncio.AbstractEventLoop | None = None
        self._beat_at = time.monotonic()
        self._next: asyncio.TimerHandle | None = None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Starts beating on loop, which is running, and watching from a thread."""
        self._loop = loop
        self._beat()
        self._thread = threading.Thread(target=self._watch, name="jobtable-loop-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stops the beat and the thread; call it on the loop."""
        if self._next is not None:
            self._next.cancel()
        self._closed.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        assert self._loop is not None
        self._beat_at = time.monotonic()
        self._next = self._loop.call_later(self._interval, self._beat)

    def _watch(self) -> None:
        warned_for = None
        while not self._closed.wait(self._interval):
            beat_at = self._beat_at
            stalled = time.monotonic() - beat_at
            if stalled > self._threshold and beat_at != warned_for:
                warned_for = beat_at
                self._warn(stalled)

    def _warn(self, stalled: float) -> None:
        try:
            task = asyncio.current_task(self._loop)
        except Exception:  # an interpreter that cannot tell from another thread
            task = None
        for job, attempt_task in self._attempts():
            if task is not None and attempt_task is task:
                JobLogger(self._logger, job.id, job.kind, job.attempt).warning(
                    "the handler has blocked the event loop for %.1f s (block_warning is %s s), "
                    "and every other job and the runner with it: an async handler must await, "
                    "not block (time.sleep, sync I/O, long CPU work); a def handler runs in a "
                    "thread of its own",
                    stalled,
                    self._threshold,
                )
                return
        self._logger.debug(
            "the event loop has been blocked for %.1f s, not by a job's handler", stalled
        )
