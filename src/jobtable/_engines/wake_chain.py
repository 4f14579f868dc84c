"""Waking the synchronous callers of a committed batch one by one, each by the one before.

Group commit (``jobtable._engines.sqlite.writer``, ``jobtable._engines.postgres.batch``)
parks each synchronous caller on a bare lock until its batch is over. Woken
all at once, those threads would all wait for the GIL together, and the
thread switches of that herd cost as much CPU as the writes themselves
(8 to 12 a write with 8 and 32 threads, against 4 to 6 woken in turn). So
only the first is woken, and each wakes the next as soon as it runs.

A caller interrupted while it waits (KeyboardInterrupt) must not break the
chain: the links are made, and an interrupted caller gives up its place,
under the group's own lock (the guard), so the chain either skips it or it
wakes the next caller itself.
"""

import threading
from collections.abc import Iterable


class Waiter:
    """What one synchronous caller blocks on until its batch is over.

    lock is held from the start and released to wake the caller. after, the
    lock of the caller it wakes next, is set under the guard before any
    caller of the batch is woken; gone (it stopped waiting) is read and
    written under the guard.
    """

    __slots__ = ("after", "gone", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.after: threading.Lock | None = None
        self.gone = False


def wait(waiter: Waiter, guard: threading.Lock) -> None:
    """Blocks until waiter is woken, then wakes the caller after it.

    When the wait is interrupted, waiter is marked gone under guard and the
    caller after it (if its batch is over) is woken; then the exception goes
    on.
    """
    try:
        waiter.lock.acquire()
    except BaseException:
        with guard:
            waiter.gone = True
            if waiter.after is not None:
                waiter.after.release()
        raise
    if waiter.after is not None:
        waiter.after.release()


def wake_in_turn(waiters: Iterable[Waiter]) -> None:
    """Wakes the first of waiters still waiting; each wakes the next. Call it under the guard."""
    first = last = None
    for waiter in waiters:
        if waiter.gone:
            continue
        if last is None:
            first = waiter
        else:
            last.after = waiter.lock
        last = waiter
    # Only once every link is made: the first may run at once.
    if first is not None:
        first.lock.release()
