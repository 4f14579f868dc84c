"""The wait between retries of a failed database call: doubling, with a cap."""

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class Backoff:
    """Waits first seconds after the first failure, twice as long after each next one, up to cap.

    Raises ValueError unless 0 < first <= cap. Tests shorten it; the
    defaults suit production.
    """

    first: float
    """Seconds to wait after the first failure."""
    cap: float
    """The longest wait, in seconds."""

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap:
            raise ValueError(
                f"jobtable: Backoff({self.first!r}, {self.cap!r}): want 0 < first <= cap"
            )

    def after(self, delay: float) -> float:
        """Returns the wait that follows a wait of delay seconds."""
        return min(delay * 2, self.cap)
