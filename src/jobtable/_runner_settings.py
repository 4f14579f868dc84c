"""The checks of a runner's settings: each bad value raises an error naming it."""

import datetime
import logging

from ._backoff import Backoff


def check_queues(workers: int | None, queues: dict[str, int] | None) -> dict[str, int]:
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
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"jobtable: queue {queue!r} has {slots!r} workers, want at least 1")
    return dict(queues)


def check_settings(
    *,
    logger: logging.Logger | None,
    name: str | None,
    poll_interval: float,
    lease: float,
    cancel_check: float,
    grace_period: float,
    retention: datetime.timedelta | None,
    max_payload_bytes: int,
    retry_backoff: Backoff,
    give_up_after: int,
) -> None:
    """Raises TypeError or ValueError, naming the setting, for a bad one (see ``Runner``)."""
    if logger is not None and not isinstance(logger, logging.Logger):
        raise TypeError(f"jobtable: logger must be a logging.Logger, got {logger!r}")
    for label, value in (
        ("poll_interval", poll_interval),
        ("lease", lease),
        ("cancel_check", cancel_check),
    ):
        if not value > 0:
            raise ValueError(f"jobtable: {label} must be positive, got {value!r}")
    if grace_period < 0:
        raise ValueError(f"jobtable: grace_period must be 0 or more, got {grace_period!r}")
    if max_payload_bytes < 1:
        raise ValueError(f"jobtable: max_payload_bytes must be positive, got {max_payload_bytes!r}")
    if retention is not None and retention < datetime.timedelta(0):
        raise ValueError(
            f"jobtable: retention must be 0 or more, or None (keep forever), got {retention!r}"
        )
    if name is not None and not name:
        raise ValueError("jobtable: a runner name must not be empty")
    if not isinstance(retry_backoff, Backoff):
        raise TypeError(f"jobtable: retry_backoff must be a Backoff, got {retry_backoff!r}")
    if isinstance(give_up_after, bool) or not isinstance(give_up_after, int) or give_up_after < 1:
        raise ValueError(f"jobtable: give_up_after must be at least 1, got {give_up_after!r}")
