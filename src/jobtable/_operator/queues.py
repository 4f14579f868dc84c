"""The store's operations on queues: pause, resume, limits, and the list of queues.

Every one is a write or read of the queues table (queries/flow.sql); a
claim reads it, so a change applies to the next claim of every runner,
which a wake (PostgreSQL's NOTIFY; a commit to a SQLite file) makes at once.
"""

import dataclasses
import datetime
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict

from jobtable._engines.base import Engine, Queries
from jobtable._engines.flow import QueueLimits, QueueRow
from jobtable._flow import Queue, Rate, check_queue_name
from jobtable._values import timestamp


class QueueInfo(BaseModel):
    """A queue as ``Store.queues`` lists it: its flow control and its jobs waiting and running.

    The limits are those claims obey now; ``overridden`` is True when an
    operator set them (``Store.set_limits``), False when they are the code's
    declaration. ``rate_per`` is the rate's period in seconds.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    paused: bool
    concurrency: int | None
    partition_limit: int | None
    rate_limit: int | None
    rate_per: float | None
    rate_per_key: bool
    overridden: bool
    queued: int
    running: int


def _info(row: QueueRow) -> QueueInfo:
    limits = row.limits
    return QueueInfo(
        name=row.name,
        paused=row.paused,
        concurrency=limits.concurrency,
        partition_limit=limits.partition_limit,
        rate_limit=limits.rate_limit,
        rate_per=limits.rate_period,
        rate_per_key=limits.rate_per_key,
        overridden=row.overridden,
        queued=row.queued,
        running=row.running,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class PauseQueue:
    """The write that pauses or resumes a queue, waking runners of other processes."""

    name: str
    paused: bool
    now: str

    def __call__(self, q: Queries) -> None:
        q.set_queue_paused(name=self.name, paused=self.paused, now=self.now)
        if not self.paused:
            q.drop_empty_queue(name=self.name)
        q.wake_runners()


@dataclasses.dataclass(frozen=True, slots=True)
class SetLimits:
    """The write of an operator's limits of a queue (None limits: clears them)."""

    name: str
    limits: QueueLimits | None
    now: str

    def __call__(self, q: Queries) -> None:
        if self.limits is None:
            q.clear_queue_limits(name=self.name, now=self.now)
            q.drop_empty_queue(name=self.name)
        else:
            q.set_queue_limits(name=self.name, limits=self.limits, now=self.now)
        q.wake_runners()


@dataclasses.dataclass(frozen=True, slots=True)
class DeclareQueues:
    """The write of the limits code declares, one queue after another, in one transaction.

    It wakes the idle runners at commit: a declared limit may be raised.
    """

    queues: tuple[Queue, ...]
    now: str

    def __call__(self, q: Queries) -> None:
        for queue in self.queues:
            q.declare_queue(name=queue.name, limits=queue.limits, now=self.now)
        if self.queues:
            # Newer code may raise a limit: the runners it lets through start at once.
            q.wake_runners()


def _list_queues(q: Queries) -> list[QueueInfo]:
    return [_info(row) for row in q.list_queues()]


def check_declared(where: str, queues: Iterable[object]) -> tuple[Queue, ...]:
    """queues as a tuple of Queue; raises TypeError naming where for anything else."""
    if isinstance(queues, Queue | str):
        raise TypeError(f"{where}: want an iterable of jobtable.Queue, got {queues!r}")
    found: list[Queue] = []
    for queue in queues:
        if not isinstance(queue, Queue):
            raise TypeError(f"{where}: want jobtable.Queue values, got {queue!r}")
        found.append(queue)
    names = [queue.name for queue in found]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: a queue is declared twice: {names!r}")
    return tuple(found)


def _limits(
    name: str,
    concurrency: int | None,
    partition_limit: int | None,
    rate: Rate | None,
) -> QueueLimits:
    # Queue checks every value, with the errors an operator's call needs too.
    limits = Queue(name, concurrency, partition_limit, rate).limits
    if concurrency is None and partition_limit is None and rate is None:
        raise ValueError(
            f"set_limits {name!r}: no limit given: give concurrency=, partition_limit= or "
            f"rate=; to drop the operator's limits so the code's apply again, call "
            f"clear_limits({name!r})"
        )
    return limits


class QueueMethods:
    """The operations of ``Store`` on queues, which sets engine and clock."""

    engine: Engine
    clock: Callable[[], datetime.datetime]

    def _stamp(self) -> str:
        return timestamp(self.clock())

    def pause(self, queue: str) -> None:
        """Pauses queue: no runner starts its jobs until resume; enqueueing still works.

        Stored in the database, so every runner of every machine honours it at its
        next claim (at once where a wake reaches it, within a poll otherwise).
        Running jobs finish.

        Args:
            queue: The queue's name.

        Raises:
            ValueError: A bad queue name.
        """
        self.engine.write(PauseQueue(check_queue_name("pause", queue), True, self._stamp()))

    async def apause(self, queue: str) -> None:
        """The async form of pause."""
        op = PauseQueue(check_queue_name("pause", queue), True, self._stamp())
        await self.engine.awrite(op)

    def resume(self, queue: str) -> None:
        """Resumes a paused queue: runners claim its jobs again, woken at once where they can be.

        Args:
            queue: The queue's name.

        Raises:
            ValueError: A bad queue name.
        """
        self.engine.write(PauseQueue(check_queue_name("resume", queue), False, self._stamp()))

    async def aresume(self, queue: str) -> None:
        """The async form of resume."""
        op = PauseQueue(check_queue_name("resume", queue), False, self._stamp())
        await self.engine.awrite(op)

    def set_limits(
        self,
        queue: str,
        *,
        concurrency: int | None = None,
        partition_limit: int | None = None,
        rate: Rate | None = None,
    ) -> None:
        """Sets queue's limits as an operator, replacing all three; None is no limit.

        They win over what runners' code declares (``Runner(flow=...)``) until
        ``clear_limits``. Runners apply them at their next claim, without a
        restart. At least one limit is required: none at all would silently
        replace the code's limits with none (``clear_limits`` is how to drop an
        operator's).

        Args:
            queue: The queue's name.
            concurrency: At most this many of the queue's jobs run at once, across
                every runner.
            partition_limit: At most this many run at once per partition key (the
                queue's ``Partition``).
            rate: At most this many of the queue's jobs start per period.

        Raises:
            TypeError: A limit of the wrong type; nothing is stored.
            ValueError: A limit below 1, a bad name, or no limit at all; nothing is
                stored.
        """
        limits = _limits(queue, concurrency, partition_limit, rate)
        self.engine.write(SetLimits(queue, limits, self._stamp()))

    async def aset_limits(
        self,
        queue: str,
        *,
        concurrency: int | None = None,
        partition_limit: int | None = None,
        rate: Rate | None = None,
    ) -> None:
        """The async form of set_limits."""
        limits = _limits(queue, concurrency, partition_limit, rate)
        await self.engine.awrite(SetLimits(queue, limits, self._stamp()))

    def clear_limits(self, queue: str) -> None:
        """Drops an operator's limits of queue: the code's latest declaration applies again.

        Args:
            queue: The queue's name.

        Raises:
            ValueError: A bad queue name.
        """
        self.engine.write(SetLimits(check_queue_name("clear_limits", queue), None, self._stamp()))

    async def aclear_limits(self, queue: str) -> None:
        """The async form of clear_limits."""
        op = SetLimits(check_queue_name("clear_limits", queue), None, self._stamp())
        await self.engine.awrite(op)

    def declare(self, queues: Iterable[Queue]) -> None:
        """Writes the limits code declares for queues; an operator's limits stay until cleared.

        A starting runner declares its ``flow``.

        Args:
            queues: The queues' declarations.

        Raises:
            TypeError: A value that is not a ``Queue``.
            ValueError: A queue given twice.
        """
        self.engine.write(DeclareQueues(check_declared("declare", queues), self._stamp()))

    async def adeclare(self, queues: Iterable[Queue]) -> None:
        """The async form of declare."""
        await self.engine.awrite(DeclareQueues(check_declared("declare", queues), self._stamp()))

    def queues(self) -> list[QueueInfo]:
        """Every queue with flow control or with jobs queued or running, by name.

        Returns:
            Each queue's pause, limits, who set them, and its jobs queued and running.
        """
        return self.engine.read(_list_queues)

    async def aqueues(self) -> list[QueueInfo]:
        """The async form of queues."""
        return await self.engine.aread(_list_queues)
