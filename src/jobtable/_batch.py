"""A batch kind: a kind whose jobs a runner hands to its handler many at a time.

A declaration like ``Kind``, shared by the web process and the workers; it
holds no handler code. ``Runner.handler`` attaches a batch handler to it,
which takes a sequence of jobs and returns one outcome per job.
"""

import dataclasses
import datetime
from collections.abc import Callable, Hashable, Iterable
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
    waits longer than max_wait for its batch to fill. With by, a batch holds
    jobs of one key only: each key gathers its own batch, with its own
    max_wait.

    Args:
        size: The most jobs one call takes, 1 or more.
        max_wait: The longest a claimed job waits for its batch to fill,
            ``timedelta(0)`` or more.
        by: A payload field's name or a function of the typed payload that
            returns the job's key (any hashable value); None batches every
            job of the kind together. A field that the payload type lacks is
            refused when the kind is declared.

    Raises:
        TypeError: size is not an int, max_wait not a timedelta, or by
            neither a str nor a function.
        ValueError: size is below 1, max_wait negative, or by an empty name.
    """

    size: int
    max_wait: datetime.timedelta
    by: str | Callable[[Any], Hashable] | None = None

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
        if isinstance(self.by, str) and not self.by:
            raise ValueError("Batch: by must be a payload field name or a function, got ''")
        if self.by is not None and not isinstance(self.by, str) and not callable(self.by):
            raise TypeError(
                f"Batch: by must be a payload field name or a function, got {self.by!r}"
            )


def batch_key(batch: Batch, payload: object) -> Hashable:
    """The key of the batch a job of payload joins: None for a batch without by.

    A field's value is read from a model's attribute or a dict's item, and
    a value that cannot be hashed (a list, a dict) is keyed by its repr.
    Raises what the key function raises, or ValueError for a missing field.
    """
    by = batch.by
    if by is None:
        return None
    key: object
    if isinstance(by, str):
        if isinstance(payload, dict):
            if by not in payload:
                raise ValueError(f"batch key field {by!r} is not in the payload")
            key = payload[by]
        elif hasattr(payload, by):
            key = getattr(payload, by)
        else:
            raise ValueError(f"batch key field {by!r} is not in the payload")
    else:
        key = by(payload)
    return key if isinstance(key, Hashable) and _hashes(key) else repr(key)


def _hashes(key: Hashable) -> bool:
    """Whether key hashes: a tuple holding a list is Hashable by type, yet does not."""
    try:
        hash(key)
    except TypeError:
        return False
    return True


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
        ValueError: batch's by names a field the payload type lacks, or as
            ``Kind`` raises it.
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
        if isinstance(batch.by, str):
            self._codec.check_field(f"BatchKind {name!r}", "batch", batch.by)
        self.batch = batch
        """The kind's batch size and longest wait."""

    def __repr__(self) -> str:
        return f"BatchKind({self.name!r}, {self.batch})"
