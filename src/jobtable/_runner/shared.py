"""What every runner service shares: the store, the runner's name and logger, its settings, stop.

Each service (producer, executor, completer, maintenance, cancel watch,
periodic scheduler) takes one ``Shared`` and reads what it needs, so a new
setting touches one dataclass rather than six constructors.
"""

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import threading

from jobtable._backoff import WriteBackoff
from jobtable._runner.contact import StoreContact
from jobtable._runner.store_trouble import StoreTrouble
from jobtable._signal import SIGNAL_RETENTION
from jobtable._store import Store


class Stop:
    """The runner's stop: one signal, read from any thread and awaited on the event loop.

    ``begin`` (from any thread, a signal handler included) makes ``is_set``
    true at once; ``reach_loop``, which the runner calls on its event loop
    right after, wakes the coroutines waiting in ``wait``. Until then they
    still see ``is_set`` as soon as they look.
    """

    __slots__ = ("_event", "_flag")

    def __init__(self) -> None:
        self._flag = threading.Event()
        # asyncio's events bind to the first loop that waits: start's or run_next's.
        self._event = asyncio.Event()

    def is_set(self) -> bool:
        """True once stop began."""
        return self._flag.is_set()

    def begin(self) -> None:
        """Marks the stop as begun; safe from any thread."""
        self._flag.set()

    def reach_loop(self) -> None:
        """Wakes what waits on the event loop; call it on the loop, after begin."""
        self._event.set()

    def block(self, seconds: float) -> bool:
        """Blocks the calling thread for seconds, or less if stop begins; returns is_set()."""
        return self._flag.wait(seconds)

    async def wait(self, seconds: float) -> bool:
        """Waits for seconds, or less if stop reached the loop; returns is_set()."""
        if not self._event.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), seconds)
        return self.is_set()


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """A runner's timings and limits, checked by ``check_settings`` before the runner exists."""

    poll_interval: float
    """Seconds an idle claimer waits before it looks for jobs enqueued elsewhere."""
    lease: float
    """Seconds without a heartbeat after which a runner counts as dead."""
    grace_period: float
    """Seconds running handlers get to finish after stop, before they are cancelled."""
    cancel_grace: float
    """Seconds a cancelled handler gets before the runner gives up on it and frees its slot."""
    block_warning: float | None
    """Seconds an async handler may block the event loop before a warning; None: no watch."""
    only_kinds: bool
    """Whether claims take only the kinds that have a handler here (otherwise every kind)."""
    retention: datetime.timedelta | None
    """How long finished jobs are kept; None keeps them forever."""
    max_result_bytes: int
    """The largest encoded result or partial result."""
    retry_backoff: WriteBackoff
    """The wait between retries of a failed claim or outcome write."""
    give_up_after: int
    """How many tries an outcome write gets once stop has begun."""
    cancel_check: float
    """Seconds between the cancel watch's reads of cancel requests."""
    signal_retention: datetime.timedelta | None = SIGNAL_RETENTION
    """How long a signal is kept for a wait that has not begun; None keeps them forever."""


@dataclasses.dataclass(frozen=True, slots=True)
class Shared:
    """What the services of one runner share; each service reads only what it needs."""

    store: Store
    """The store the runner's jobs live in."""
    name: str
    """The runner's name among the runners of the store."""
    logger: logging.Logger
    """Where the runner logs."""
    settings: Settings
    """The runner's timings and limits."""
    stop: Stop
    """The runner's stop."""
    contact: StoreContact
    """The runner's record of its own contact with the store (see ``StoreContact``)."""
    trouble: StoreTrouble
    """Where the services log their failed store operations (see ``StoreTrouble``)."""
