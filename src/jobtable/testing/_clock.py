"""The frozen clock: the time a store reads stands still until the test moves it."""

import datetime
import threading


def _aware(where: str, moment: datetime.datetime) -> datetime.datetime:
    if not isinstance(moment, datetime.datetime):
        raise TypeError(f"FrozenClock.{where}: want a datetime, got {type(moment).__name__}")
    if moment.tzinfo is None:
        raise ValueError(f"FrozenClock.{where}: {moment!r} is naive; give it a time zone")
    return moment.astimezone(datetime.UTC)


class FrozenClock:
    """A clock that stands still until the test moves it: ``Store.open(target, clock=clock)``.

    The store takes from it every time it writes: created_at, the run_at of
    a delay and of a retry's backoff, and when a scheduled job counts as due.
    So a job enqueued with ``delay=timedelta(minutes=5)`` is not claimed until
    the test calls ``clock.advance(minutes=5)``, however long the test takes.
    On PostgreSQL runners' leases keep the server's clock, so a frozen clock
    never makes a live runner look dead. Safe to read and move from any
    thread.

    Args:
        start: Where the clock starts, an aware datetime; None is the real
            time it was made.

    Raises:
        TypeError: start is not a datetime.
        ValueError: start is naive.
    """

    def __init__(self, start: datetime.datetime | None = None) -> None:
        moment = datetime.datetime.now(datetime.UTC) if start is None else start
        self._now = _aware("__init__", moment)
        self._lock = threading.Lock()

    def __call__(self) -> datetime.datetime:
        """Returns the clock's time, an aware UTC datetime."""
        with self._lock:
            return self._now

    def advance(
        self,
        delta: datetime.timedelta | None = None,
        /,
        *,
        days: float = 0,
        hours: float = 0,
        minutes: float = 0,
        seconds: float = 0,
    ) -> datetime.datetime:
        """Moves the clock on by delta, or by the units given, and returns the new time.

        A negative step moves it back, as a wall clock may step.

        Args:
            delta: How far to move it; added to the units, when both are given.
            days: Days to move it.
            hours: Hours to move it.
            minutes: Minutes to move it.
            seconds: Seconds to move it.

        Returns:
            The clock's new time.

        Raises:
            TypeError: delta is not a timedelta.
        """
        step = datetime.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
        if delta is not None:
            if not isinstance(delta, datetime.timedelta):
                raise TypeError(f"FrozenClock.advance: want a timedelta, got {delta!r}")
            step += delta
        with self._lock:
            self._now += step
            return self._now

    def set(self, moment: datetime.datetime) -> None:
        """Sets the clock to moment.

        Args:
            moment: The new time, an aware datetime.

        Raises:
            TypeError: moment is not a datetime.
            ValueError: moment is naive.
        """
        moment = _aware("set", moment)
        with self._lock:
            self._now = moment

    def __repr__(self) -> str:
        return f"FrozenClock({self().isoformat()})"
