"""The checks of a Runner's settings, and its defaults that are not plain values.

Each bad setting is a TypeError or ValueError naming it, raised before the
runner exists.
"""

import datetime
import logging
import os
import socket

from jobtable._backoff import WriteBackoff
from jobtable._runner.shared import Settings
from jobtable._signal import SIGNAL_RETENTION
from jobtable._store import Store
from jobtable._values import unstorable

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
