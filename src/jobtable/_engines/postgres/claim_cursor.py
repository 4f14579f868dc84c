"""Where a runner process's claims of each queue stopped, so that the next one starts there.

The claim (FinishAndClaimJobs) reads jobs_queued in (priority, seq) order
from a place it is given. From the queue's head, it visits every entry of a
job claimed since the last vacuum; while a transaction holds back the xmin
(a long transaction, a repeatable-read reader), vacuum cannot remove them,
and each claim visits every job claimed during the hold in the heap. From
where the last claim stopped, it skips them all.

A job can become ready behind that place: a retry or a released job keeps
its seq, a job of a lower priority may be enqueued, and an enqueue that
commits late has a seq lower than jobs claimed before its commit. So the
claim starts from the head again: at least every RESCAN_SECONDS, after a
notification that jobs were released (``ready:`` and a queue, or
``released``), and after this process put a job back in its queue or made
scheduled jobs ready. A plain enqueue's notification moves nothing: its jobs
stand after every place claims stopped, unless it committed late or took a
lower priority, which the next rescan finds.
"""

import math
import threading
import time
from collections.abc import Callable, Iterable

RESCAN_SECONDS = 1.0
"""The longest a runner's claims of a queue go without starting from its head."""

HEAD = (-(2**31), 0)
"""A place before every job: priority is an integer column, seq is positive."""

_Key = tuple[str, tuple[str, ...] | None]


class ClaimCursors:
    """The place (priority, seq) where each of a process's claims of a queue stopped.

    One per engine, shared by its threads; a queue claimed for a set of
    kinds has a place of its own. Thread-safe.
    """

    def __init__(
        self,
        rescan: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Places kept for rescan seconds at most (None: RESCAN_SECONDS), timed by clock."""
        self._rescan = RESCAN_SECONDS if rescan is None else rescan
        self._clock = clock
        self._lock = threading.Lock()
        self._places: dict[_Key, tuple[int, int]] = {}
        self._scanned: dict[_Key, float] = {}

    def start(self, queue: str, kinds: Iterable[str] | None) -> tuple[int, int]:
        """The place after which the next claim of queue (for kinds) picks jobs.

        Args:
            queue: The queue claimed.
            kinds: The kinds claimed, or None for every kind.

        Returns:
            (priority, seq): HEAD when the claim must start from the queue's
            head (no place yet, a rescan due, or a release since), else
            where the last claim stopped.
        """
        key = _key(queue, kinds)
        now = self._clock()
        with self._lock:
            place = self._places.get(key)
            if place is None or now - self._scanned.get(key, -math.inf) >= self._rescan:
                self._scanned[key] = now
                return HEAD
            return place

    def claimed(
        self, queue: str, kinds: Iterable[str] | None, places: Iterable[tuple[int, int]]
    ) -> None:
        """Remembers where a claim of queue stopped: the last of places, the claimed jobs'.

        Args:
            queue: The queue claimed.
            kinds: The kinds claimed, or None for every kind.
            places: (priority, seq) of each job the claim took; none leaves
                the place as it was.
        """
        last = max(places, default=None)
        if last is None:
            return
        key = _key(queue, kinds)
        with self._lock:
            self._places[key] = last

    def rewind(self, queue: str | None = None) -> None:
        """Makes the next claim of queue (of every queue when None) start from its head.

        Args:
            queue: The queue where a job may have become ready behind the
                place, or None when that may be any queue.
        """
        with self._lock:
            if queue is None:
                self._places.clear()
                return
            for key in [key for key in self._places if key[0] == queue]:
                del self._places[key]


def _key(queue: str, kinds: Iterable[str] | None) -> _Key:
    return queue, None if kinds is None else tuple(sorted(kinds))
