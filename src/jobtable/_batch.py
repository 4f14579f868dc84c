"""A batch kind: a kind whose jobs a runner hands to its handler many at a time.

A declaration like ``Kind``, shared by the web process and the workers; it
holds no handler code. ``Runner.handler`` attaches a batch handler to it,
which takes a sequence of jobs and returns one outcome per job.
"""

import dataclasses
import datetime
from collections.abc import Iterable
from typing import Any, TypedDict, TypeVar

from typing_extensions import Unpack

from jobtable._flow import Partition
from jobtable._flow import Sequence as JobSequence
from jobtable._kind import Kind
from jobtable._options import RetryPolicy
from jobtable._unique import Unique

P = TypeVar("P")
R = TypeVar("R")


@dataclasses.dataclass(frozen=True, slots=True)
class Batch:
    """How many jobs of a batch kind one handler call takes, and how long a batch may gather.

    A runner calls a batch kind's handler with up to size of its jobs at once.
    When fewer are ready, the jobs it has wait for more for at most max_wait
    from the first one's arrival, then go to the handler as they are: no job
    waits longer than max_wait for its batch to fill.

    Args:
        size: The most jobs one call takes, 1 or more.
        max_wait: The longest a claimed job waits for its batch to fill,
            ``timedelta(0)`` or more.

    Raises:
        TypeError: size is not an int, or max_wait not a timedelta.
        ValueError: size is below 1, or max_wait negative.
    """

    size: int
    max_wait: datetime.timedelta

    def __post_init__(self) -> None:
        if not isinstance(self.size, int) or isinstance(self.size, bool):
            raise TypeError(f"Batch: size must be an int, got {type(self.size).__name__}")
        if self.size < 1:
            raise ValueError(f"Batch: size must be 1 or more, got {self.size}")
        if not isinstance(self.max_wait, datetime.timedelta):
            raise TypeError(
                f"Batch: max_wait must be a datetime.timedelta, got {type(self.max_wait).__name__}"
            )
        if self.max_wait < datetime.timedelta(0):
            raise ValueError(f"Batch: max_wait must not be negative, got {self.max_wait}")


class KindOptions(TypedDict, total=False):
    """The options a ``Kind`` takes besides its name and types (see ``Kind``)."""

    max_attempts: int
    retry: RetryPolicy | None
    priority: int
    queue: str
    timeout: float | None
    delay: datetime.timedelta | None
    unique: Unique | None
    partition: Partition | None
    sequence: JobSequence | None
    tags: Iterable[str] | None
    meta: type[Any] | None


class BatchKind(Kind[P, R]):
    """A kind whose handler takes many of its jobs in one call: a ``Kind`` with a ``Batch``.

    Its jobs are enqueued, read and awaited as any kind's, one job per
    payload, each with its own id, attempts, retries and result. Only the
    handler differs: ``Runner.handler(batch_kind)`` attaches one that takes a
    sequence of ``BatchJob`` (each job's context and payload) and returns a
    sequence with one outcome per job, in order: an R, or a ``Failure``.

    Args:
        name: The kind's name, as stored in each of its jobs.
        payload_type: P, any type pydantic can validate and dump.
        result_type: R, any type pydantic can validate and dump.
        batch: The most jobs one call takes and the longest a job waits for
            its batch to fill.
        **options: The options ``Kind`` takes (max_attempts, retry, priority,
            queue, timeout, delay, unique, partition, sequence, tags, meta).

    Raises:
        TypeError: batch is not a ``Batch``, or as ``Kind`` raises it.
        ValueError: As ``Kind`` raises it.
    """

    def __init__(
        self,
        name: str,
        payload_type: type[P],
        result_type: type[R],
        *,
        batch: Batch,
        **options: Unpack[KindOptions],
    ) -> None:
        if not isinstance(batch, Batch):
            raise TypeError(
                f"BatchKind {name!r}: batch must be a jobtable.Batch(size=..., max_wait=...), "
                f"got {type(batch).__name__}"
            )
        super().__init__(name, payload_type, result_type, **options)
        self.batch = batch
        """The kind's batch size and longest wait."""

    def __repr__(self) -> str:
        return f"BatchKind({self.name!r}, {self.batch})"
