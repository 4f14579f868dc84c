"""The cancel watch: finds cancel requests for the jobs this runner is running."""

import asyncio
import contextlib
from collections.abc import Callable

from jobtable._runner.run_operations import ListCancelRequests
from jobtable._runner.shared import Shared


class CancelWatch:
    """Every interval seconds while jobs run, or when poked, reads their cancel requests.

    cancel(job_id, attempt) ends the attempt (see ``Executor.cancel``); busy
    tells whether any attempt runs, so an idle runner reads nothing. A poke
    (a cancel notification, or stop) makes it read at once; the interval is
    the fallback for requests no notification announced. A failed read is
    logged and tried again at the next round.
    """

    def __init__(
        self,
        shared: Shared,
        *,
        busy: Callable[[], bool],
        cancel: Callable[[str, int], bool],
    ) -> None:
        self._store = shared.store
        self._runner = shared.name
        self._trouble = shared.trouble
        self._interval = shared.settings.cancel_check
        self._busy = busy
        self._cancel = cancel
        self._stop = shared.stop
        self._poked = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def poke(self) -> None:
        """Makes run read the requests now (or notice stop); call it on the event loop."""
        self._poked.set()

    def notify(self) -> None:
        """Pokes from any thread (a cancel notification); does nothing until run has begun."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._poked.set)

    async def run(self) -> None:
        """Hands on cancel requests until stop."""
        self._loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), self._interval)
            # Cleared before the read: a poke during it makes the next round
            # read again at once.
            self._poked.clear()
            if not self._stop.is_set() and self._busy():
                await self.check()

    async def check(self) -> None:
        """Reads the cancel requests once and hands them on; logs a failed read."""
        try:
            requests = await self._store.engine.aread(ListCancelRequests(self._runner))
        except Exception as err:
            self._trouble.failed("read cancel requests", err)
            return
        self._trouble.landed()
        for job_id, attempt in requests.items():
            self._cancel(job_id, attempt)
