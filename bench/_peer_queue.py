"""The face every queue of the peers comparison shows (``Queue``), jobtable's and each peer's."""

import abc


class Queue(abc.ABC):
    """One queue on a database of its own, driven through its own API."""

    label: str
    engine: str

    @abc.abstractmethod
    def enqueue_one(self, count: int) -> float:
        """Seconds to enqueue count no-op jobs one a call; they stay queued."""

    def enqueue_batch(self, count: int) -> float | None:
        """Seconds to enqueue count jobs 100 a call, or None without a batch form.

        Without one, the jobs are enqueued one a call, untimed.
        """
        self.enqueue_one(count)
        return None

    @abc.abstractmethod
    def drain(self, count: int, workers: int) -> float:
        """Seconds for a worker of workers to run the count queued jobs."""

    def enqueue_threads(self, count: int, threads: int) -> float | None:
        """Seconds to enqueue count jobs one a call from threads threads; None if not measured."""
        return None

    @abc.abstractmethod
    def clear(self) -> None:
        """Removes every job."""

    @abc.abstractmethod
    def close(self) -> None:
        """Closes the queue and removes its database."""
