"""The wait between retries of a failed database write or reconnect: doubling, with a cap.

It is not a job's retry policy: that is ``ExponentialBackoff``, on a kind or an enqueue.
"""

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class WriteBackoff:
    """Waits first seconds after a failed database write, twice as long after each next, up to cap.

    The runner retries a failed claim or outcome write after it
    (``Runner(retry_backoff=...)``); a job's own retries follow the kind's
    ``ExponentialBackoff`` instead. Tests shorten it; the defaults suit
    production.

    Args:
        first: Seconds to wait after the first failure.
        cap: The longest wait, in seconds.

    Raises:
        ValueError: Unless 0 < first <= cap.
    """

    first: float
    """Seconds to wait after the first failure."""
    cap: float
    """The longest wait, in seconds."""

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap:
            raise ValueError(
                f"jobtable: WriteBackoff({self.first!r}, {self.cap!r}): want 0 < first <= cap"
            )

    def after(self, delay: float) -> float:
        """Returns the wait that follows a wait of delay seconds: twice it, at most cap.

        Args:
            delay: The wait just made, in seconds.

        Returns:
            The next wait, in seconds.
        """
        return min(delay * 2, self.cap)
