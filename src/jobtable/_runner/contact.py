"""A runner's contact with its store: when it may judge others dead, and its trouble logged once.

A runner that cannot write cannot heartbeat, so a peer cut off from the store
looks exactly like a dead one. A runner therefore judges peers only on
evidence it gathered while it could reach the store itself: once its own
writes have landed, each promptly, for a whole lease. Every live peer
heartbeats several times a lease, so after such a lease a live peer's
heartbeat is fresh, and a stale one means the peer is dead.

Trouble reaching the store is logged once per episode instead of once per
retry (``StoreTrouble``).
"""

import logging
import threading
import time

from jobtable._errors import StoreError


class StoreContact:
    """Tracks how long a runner has been writing to the store without trouble.

    Times are seconds on one monotonic clock. A write that failed means the
    store may have been out of reach for everyone, so the count starts over
    with the next write that lands promptly; a write that took longer than
    slow_after seconds landed, but everyone's writes may have waited as long,
    so the count starts over from the moment it landed.
    """

    def __init__(self, lease: float, slow_after: float) -> None:
        self.lease = lease
        """Seconds of trouble-free writes before peers may be judged."""
        self.slow_after = slow_after
        """Seconds after which a write counts as delayed."""
        self._since: float | None = None

    @classmethod
    def of_runner(cls, lease: float) -> "StoreContact":
        """The contact of a runner with lease: peers are judged after a lease of prompt writes.

        A write slower than the runner's heartbeat interval, a third of the
        lease, counts as delayed.
        """
        return cls(lease, slow_after=lease / 3)

    def may_judge(self, started: float, moment: float) -> bool:
        """True when a write that started at started may judge peers at moment.

        Writes must have landed promptly, with no failure, for a lease before
        started, and this write must not have waited (for a connection, a
        lock) longer than slow_after since: the store may have been out of
        reach meanwhile.
        """
        return (
            self._since is not None
            and started - self._since >= self.lease
            and moment - started <= self.slow_after
        )

    def landed(self, started: float, finished: float) -> None:
        """Records a write that started at started and was committed at finished."""
        if finished - started > self.slow_after:
            self._since = finished
        elif self._since is None:
            self._since = started

    def failed(self) -> None:
        """Records a write that failed: the lease of evidence starts over."""
        self._since = None


class StoreTrouble:
    """Logs a runner's transient store errors once per episode; others each time.

    An episode begins with a transient StoreError (``StoreError.transient``:
    a lost connection, a server refusing connections, a pool that stayed
    busy) and ends with the next operation that lands (``landed``). The
    first error of an episode is a warning, with the error's traceback;
    those after it are DEBUG records; the end is an INFO record with the
    count and the duration. Any other exception is logged with its
    traceback at ERROR every time: it is a refusal or a bug, not an outage.
    Safe from any thread.
    """

    def __init__(self, logger: logging.Logger, runner: str) -> None:
        self._logger = logger
        self._runner = runner
        self._lock = threading.Lock()
        # When the episode under way began (monotonic), None between episodes.
        self._since: float | None = None
        self._failures = 0

    def failed(self, message: str, err: BaseException, **extra: object) -> None:
        """Logs message ("claim jobs; retrying") for err, as this docstring's class says.

        Every record carries err's traceback. extra goes into the record,
        with the runner's name.
        """
        fields = {"runner": self._runner, **extra}
        if not (isinstance(err, StoreError) and err.transient):
            self._logger.error(message, exc_info=err, extra=fields)
            return
        with self._lock:
            first = self._since is None
            if first:
                self._since = time.monotonic()
            self._failures += 1
        if first:
            self._logger.warning(message, exc_info=err, extra=fields)
        else:
            self._logger.debug(message, exc_info=err, extra=fields)

    def landed(self) -> None:
        """Notes an operation that reached the store: ends the episode under way, if any."""
        if self._since is None:
            return
        with self._lock:
            since, failures = self._since, self._failures
            if since is None:
                return
            self._since = None
            self._failures = 0
        self._logger.info(
            "the store answers again after %d failed tries over %.1f s",
            failures,
            time.monotonic() - since,
            extra={"runner": self._runner},
        )
