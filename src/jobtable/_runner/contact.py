"""When a runner may judge other runners dead: its own contact with the store.

A runner that cannot write cannot heartbeat, so a peer cut off from the store
looks exactly like a dead one. A runner therefore judges peers only on
evidence it gathered while it could reach the store itself: once its own
writes have landed, each promptly, for a whole lease. Every live peer
heartbeats several times a lease, so after such a lease a live peer's
heartbeat is fresh, and a stale one means the peer is dead.
"""


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
