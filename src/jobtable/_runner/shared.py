"""What every runner service shares: the store, its name and logger, checked settings, stop.

Each service (producer, executor, completer, maintenance, cancel watch,
periodic scheduler) takes one ``Shared`` and reads what it needs, so a new
setting touches one dataclass rather than six constructors.

The checks of a Runner's settings and its defaults that are not plain
values live here too, next to ``Settings``; ``JobLogger`` is the
runner's logger for one attempt.
"""

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import os
import socket
import threading
from collections.abc import MutableMapping
from typing import Any

from jobtable._backoff import WriteBackoff
from jobtable._runner.contact import StoreContact, StoreTrouble
from jobtable._signal import SIGNAL_RETENTION
from jobtable._store import Store
from jobtable._values import unstorable


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


RETRY = WriteBackoff(0.05, 5.0)
"""The default wait between retries of a failed claim or outcome write."""


def check_queues(workers: object, queues: object) -> dict[str, int]:
    """Returns the slots of each queue; raises naming the bad value."""
    if queues is None:
        slots = 4 if workers is None else workers
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"jobtable: {slots!r} workers, want at least 1")
        return {"default": slots}
    if workers is not None:
        raise ValueError("jobtable: give workers (the default queue's) or queues, not both")
    if not isinstance(queues, dict) or not queues:
        raise ValueError(
            f"jobtable: queues must be a non-empty dict of name to slots, got {queues!r}"
        )
    for queue, slots in queues.items():
        if not isinstance(queue, str) or not queue:
            raise ValueError(f"jobtable: a queue name must be a non-empty str, got {queue!r}")
        if why := unstorable(queue):
            raise ValueError(f"jobtable: queue {queue!r} cannot be stored: {why}")
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"jobtable: queue {queue!r} has {slots!r} workers, want at least 1")
    return dict(queues)


def check_settings(
    *,
    store: object,
    logger: object,
    poll_interval: float,
    lease: float,
    cancel_check: float,
    grace_period: float,
    cancel_grace: float,
    block_warning: float | None,
    only_kinds: bool,
    retention: datetime.timedelta | None,
    signal_retention: datetime.timedelta | None = SIGNAL_RETENTION,
    max_payload_bytes: int,
    max_result_bytes: int,
    retry_backoff: WriteBackoff,
    give_up_after: int,
) -> Settings:
    """Returns the settings the runner's services share; raises naming the first bad one.

    Each bad setting is a TypeError or ValueError naming it.
    """
    if not isinstance(store, Store):
        raise TypeError(f"jobtable: Runner needs a Store, got {type(store).__name__}")
    if logger is not None and not isinstance(logger, logging.Logger):
        raise TypeError(f"jobtable: logger must be a logging.Logger, got {logger!r}")
    for label, value in (
        ("poll_interval", poll_interval),
        ("lease", lease),
        ("cancel_check", cancel_check),
    ):
        if not value > 0:
            raise ValueError(f"jobtable: {label} must be positive, got {value!r}")
    _check_stop_settings(grace_period, cancel_grace, block_warning, only_kinds)
    for label, limit in (
        ("max_payload_bytes", max_payload_bytes),
        ("max_result_bytes", max_result_bytes),
    ):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"jobtable: {label} must be a positive int, got {limit!r}")
    if retention is not None and retention < datetime.timedelta(0):
        raise ValueError(
            f"jobtable: retention must be 0 or more, or None (keep forever), got {retention!r}"
        )
    check_signal_retention(signal_retention)
    if not isinstance(retry_backoff, WriteBackoff):
        raise TypeError(f"jobtable: retry_backoff must be a WriteBackoff, got {retry_backoff!r}")
    if isinstance(give_up_after, bool) or not isinstance(give_up_after, int) or give_up_after < 1:
        raise ValueError(f"jobtable: give_up_after must be at least 1, got {give_up_after!r}")
    return Settings(
        poll_interval=poll_interval,
        lease=lease,
        grace_period=grace_period,
        cancel_grace=cancel_grace,
        block_warning=block_warning,
        only_kinds=only_kinds,
        retention=retention,
        signal_retention=signal_retention,
        max_result_bytes=max_result_bytes,
        retry_backoff=retry_backoff,
        give_up_after=give_up_after,
        cancel_check=cancel_check,
    )


def check_signal_retention(signal_retention: object) -> None:
    """Raises naming signal_retention unless it is a positive timedelta or None (keep forever)."""
    if signal_retention is None:
        return
    if not isinstance(signal_retention, datetime.timedelta):
        raise TypeError(
            "jobtable: signal_retention must be a timedelta, or None (keep forever), "
            f"got {signal_retention!r}"
        )
    if signal_retention <= datetime.timedelta(0):
        raise ValueError(
            "jobtable: signal_retention must be positive, or None (keep forever), "
            f"got {signal_retention!r}"
        )


def _check_stop_settings(
    grace_period: float, cancel_grace: float, block_warning: float | None, only_kinds: bool
) -> None:
    """Raises naming the first bad one of the settings about stops, blocks and claims."""
    if not grace_period >= 0:
        raise ValueError(f"jobtable: grace_period must be 0 or more, got {grace_period!r}")
    if not cancel_grace >= 0:
        raise ValueError(f"jobtable: cancel_grace must be 0 or more, got {cancel_grace!r}")
    if block_warning is not None and not block_warning > 0:
        raise ValueError(
            f"jobtable: block_warning must be positive, or None (no watch), got {block_warning!r}"
        )
    if not isinstance(only_kinds, bool):
        raise TypeError(f"jobtable: only_kinds must be a bool, got {only_kinds!r}")


def runner_name(name: object) -> str:
    """Returns name, or by default the host name and process id, which differ per process.

    Raises ValueError for a name that is empty, not a str, or text the
    engines cannot store.
    """
    if name is None:
        return f"{socket.gethostname()}-{os.getpid()}"
    if not isinstance(name, str) or not name:
        raise ValueError(f"jobtable: a runner name must be a non-empty str, got {name!r}")
    if why := unstorable(name):
        raise ValueError(f"jobtable: runner name {name!r} cannot be stored: {why}")
    return name


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    """Adds the job's id, kind and attempt to every record as structured fields.

    ``job_id``, ``kind`` and ``attempt`` (the claim's attempt number, from 1)
    are attributes of each record, which a formatter or a JSON handler
    prints; the message itself need not repeat them.
    """

    def __init__(self, logger: logging.Logger, job_id: str, kind: str, attempt: int) -> None:
        super().__init__(logger, {"job_id": job_id, "kind": kind, "attempt": attempt})

    def process(
        self, msg: object, kwargs: MutableMapping[str, Any]
    ) -> tuple[object, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs
