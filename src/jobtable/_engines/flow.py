"""The values of flow control that cross the seam: a queue's limits, its state, a job's wait.

Each engine's adapter builds them from its generated rows (SQLite stores
booleans as integers, PostgreSQL as booleans), so the runner and the store
see one shape.
"""

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from jobtable._engines.rows import ClaimedRow


class QueueLimits(NamedTuple):
    """A queue's limits as stored; None is no limit.

    concurrency: jobs of the queue running at once, across every runner;
    partition_limit: of one partition key; rate_limit jobs started in any
    rate_period seconds, per key when rate_per_key.
    """

    concurrency: int | None = None
    partition_limit: int | None = None
    rate_limit: int | None = None
    rate_period: float | None = None
    rate_per_key: bool = False


class QueueFlow(NamedTuple):
    """The flow control a claim obeys: whether the queue is paused, and its limits."""

    paused: bool
    limits: QueueLimits

    @property
    def partitioned(self) -> bool:
        """Whether a claim counts per partition key (a partition limit, or a rate per key)."""
        limits = self.limits
        return limits.partition_limit is not None or (
            limits.rate_per_key and limits.rate_limit is not None
        )

    def key_cap(self, max_jobs: int) -> int:
        """The most jobs of one key a claim of max_jobs could take."""
        caps = [max_jobs]
        if self.limits.partition_limit is not None:
            caps.append(self.limits.partition_limit)
        if self.limits.rate_per_key and self.limits.rate_limit is not None:
            caps.append(self.limits.rate_limit)
        return max(min(caps), 0)


class QueueRow(NamedTuple):
    """A queue as ListQueues reads it: its flow control and its queued and running jobs."""

    name: str
    paused: bool
    limits: QueueLimits
    overridden: bool
    queued: int
    running: int


class WaitFacts(NamedTuple):
    """What may hold back a queued job: its queue's flow control and the counts it meets."""

    paused: bool
    limits: QueueLimits
    running: int
    running_in_key: int
    starts: int
    starts_in_key: int
    behind_sequence: bool


class FlowQueries(Protocol):
    """The queries of flow control (queries/flow.sql), as each engine's adapter runs them."""

    def queue_flow(self, *, queue: str, lock: bool) -> QueueFlow | None:
        """The queue's flow control, None when it has none (not paused, no limit).

        With lock, the engine makes the limited claims of the queue that
        follow in this transaction the only ones until it ends (PostgreSQL
        locks the queue's row; SQLite's single writer already does).
        """
        ...

    def claim_within_limits(
        self, *, flow: QueueFlow, runner: str, queue: str, now: str, max_jobs: int
    ) -> Sequence[ClaimedRow]:
        """Claims up to max_jobs ready jobs of queue that flow's limits allow, fairly by key.

        Run it after ``queue_flow(lock=True)`` in the same transaction. Records
        each start when the queue has a rate. Claims nothing while paused.
        """
        ...

    def next_rate_opening(self, *, queue: str, period: float, now: str) -> float | None:
        """Seconds until queue's rate window of period seconds admits another start.

        That is when the oldest start the window counts leaves it (0 or less:
        it has); None when the window counts no start. The engine measures it
        by the clock its claims count starts by (PostgreSQL: the server's).
        """
        ...

    def declare_queue(self, *, name: str, limits: QueueLimits, now: str) -> None:
        """Records the limits code declares for queue name (an operator's override stays)."""
        ...

    def set_queue_limits(self, *, name: str, limits: QueueLimits, now: str) -> None:
        """Sets an operator's limits of queue name, kept until cleared."""
        ...

    def clear_queue_limits(self, *, name: str, now: str) -> int:
        """Drops an operator's limits of queue name; returns 0 when it has no row."""
        ...

    def set_queue_paused(self, *, name: str, paused: bool, now: str) -> None:
        """Pauses or resumes queue name, waking listening runners where the engine can."""
        ...

    def drop_empty_queue(self, *, name: str) -> None:
        """Deletes queue name's row if it holds nothing: no pause, no limits, none declared."""
        ...

    def list_queues(self) -> list[QueueRow]:
        """Every queue with a row or with queued or running jobs, by name."""
        ...

    def get_wait_facts(self, *, id: str, now: str) -> WaitFacts | None:
        """What may hold back the queued job id; None when it is not queued."""
        ...
