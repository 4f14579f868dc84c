"""A worker process's runner: SIGINT and SIGTERM, and a bound on how long its stop may take.

``Runner.run`` promises that a signal ends the process in bounded time,
whatever its handlers do. The loop cannot keep that promise alone: an async
handler that blocks it (``time.sleep``) stops the very code that would react
to the signal. So the signals reach a thread of their own, through the
interpreter's wakeup fd, which the C-level signal handler writes whatever the
main thread is doing; that thread asks the loop to stop and, when the stop
overruns its bound, ends the process itself.
"""

import asyncio
import contextlib
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Callable, Collection, Coroutine
from typing import Any

EXIT_SLACK = 5.0
"""Seconds a stopping process gets after its runner's grace period and cancel grace: to record
its jobs' outcomes and deregister, or else to record them from the watchdog and exit."""

LAST_WRITE = 2.0
"""Seconds of EXIT_SLACK kept for the watchdog's own write of the interrupted jobs."""

EXIT_STATUS = 1
"""The exit status of a process ended because its stop overran the bound."""

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_CLOSE = b"\0"  # no signal has number 0: what __exit__ writes to end the thread


def _ignore(signum: int, frame: types.FrameType | None) -> None:
    """The Python-level handler: the wakeup fd does the work, in the guard's thread."""


class ProcessGuard:
    """Turns SIGINT and SIGTERM into a stop, and ends the process when the stop overruns.

    The first signal calls stop; the process is then done within
    grace_period + cancel_grace + EXIT_SLACK seconds. A second calls
    end_grace (the handlers still running are cancelled at once) and
    shortens the bound to cancel_grace + EXIT_SLACK from then. A third, or
    the bound coming LAST_WRITE seconds close, calls last_words (which logs
    what would not stop and records it, in up to LAST_WRITE seconds) and
    ends the process with os._exit(EXIT_STATUS). stop
    and end_grace are called from the guard's thread. Enter and leave it on
    the main thread.
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        grace_period: float,
        cancel_grace: float,
        stop: Callable[[], None],
        end_grace: Callable[[], object],
        last_words: Callable[[], None],
    ) -> None:
        self._logger = logger
        slack = EXIT_SLACK - LAST_WRITE  # the watchdog's last write fits in the bound
        self._bounds = (grace_period + cancel_grace + slack, cancel_grace + slack)
        self._stop = stop
        self._end_grace = end_grace
        self._last_words = last_words
        self._signals = 0
        self._deadline: float | None = None
        self._reader, self._writer = socket.socketpair()
        self._previous: dict[signal.Signals, Any] = {}
        self._previous_fd = -1
        self._thread = threading.Thread(target=self._watch, name="jobtable-stop-guard", daemon=True)

    def __enter__(self) -> "ProcessGuard":
        self._writer.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        for sig in _SIGNALS:
            self._previous[sig] = signal.signal(sig, _ignore)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
        signal.set_wakeup_fd(self._previous_fd)
        with contextlib.suppress(OSError):
            self._writer.send(_CLOSE)
        self._thread.join()
        self._reader.close()
        self._writer.close()

    def _watch(self) -> None:
        while True:
            deadline = self._deadline
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._reader], [], [], timeout)
            if readable:
                for signum in self._reader.recv(256):
                    if signum == _CLOSE[0]:
                        return
                    if signum in _SIGNALS:
                        self._signalled(signal.Signals(signum))
            if self._deadline is not None and time.monotonic() >= self._deadline:
                self._exit("the runner did not stop within its bound")

    def _signalled(self, sig: signal.Signals) -> None:
        self._signals += 1
        now = time.monotonic()
        if self._signals == 1:
            self._deadline = now + self._bounds[0]
            self._logger.info(
                "%s: stopping; the process ends within %s s",
                sig.name,
                self._bounds[0] + LAST_WRITE,
            )
            self._stop()
        elif self._signals == 2:
            assert self._deadline is not None
            self._deadline = min(self._deadline, now + self._bounds[1])
            self._logger.warning("%s again: cancelling the handlers still running", sig.name)
            self._end_grace()
        else:
            self._exit(f"{sig.name} a third time")

    def _exit(self, why: str) -> None:
        try:
            self._logger.error("%s: ending the process (exit status %s)", why, EXIT_STATUS)
            self._last_words()
        finally:
            for handler in logging.getLogger().handlers + self._logger.handlers:
                with contextlib.suppress(Exception):
                    handler.flush()
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(EXIT_STATUS)


def _park(tasks: Collection[Any]) -> None:
    """Keeps tasks alive until the process ends, in the frame of a daemon thread that never ends.

    A coroutine that is garbage-collected is closed: GeneratorExit is thrown
    into it, and a handler that swallows every exception loops for ever in
    the collector, at the latest as the interpreter exits. Objects a daemon
    thread's frame holds are never collected.
    """
    threading.Thread(
        target=lambda held=list(tasks): threading.Event().wait(),
        name="jobtable-stuck-handlers",
        daemon=True,
    ).start()


def run_loop(main: Coroutine[Any, Any, None], stuck: Callable[[], Collection[Any]]) -> None:
    """Runs main on a new event loop, as asyncio.run does, but leaves the tasks in stuck().

    asyncio.run cancels every task left at the end and waits for each: a
    handler that ignores cancellation would hold the process for ever. The
    runner has recorded those tasks' jobs and given up on them; they are
    left pending when the loop closes, and never collected (see _park).
    """
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(main)
    finally:
        try:
            given_up = stuck()
            if given_up:
                _park(given_up)
            left = [t for t in asyncio.all_tasks(loop) if t not in given_up]
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
