"""Batch handlers: the jobs of a batch kind gathered into one handler call, outcomes per job.

Each claimed job of a batch kind still has its own worker slot, attempt,
timeout and outcome: its worker joins the batch gathering for the kind and
waits for its own outcome, which the call's returned sequence gives it. So
flow control counts every job, a cancel or a timeout ends one job, and each
outcome rides on its worker's next claim as a single job's does.
"""

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar, cast, overload

from jobtable._batch import Batch, batch_key
from jobtable._errors import Failure, Retry
from jobtable._runner.context import JobContext
from jobtable._runner.shared import Stop

P = TypeVar("P")
R = TypeVar("R")


@dataclasses.dataclass(frozen=True, slots=True)
class BatchJob(Generic[P, R]):
    """One job of a batch, as a batch handler sees it: its context and its payload.

    Args:
        ctx: The job's context, as a single job's handler gets it (its id,
            attempt, ``publish``, ``step``, ``cancelled``...).
        payload: The job's payload, a P.
    """

    ctx: JobContext[R]
    payload: P


AsyncBatchHandler = Callable[[Sequence[BatchJob[P, R]]], Awaitable[Sequence[R | Failure | Retry]]]
"""An ``async def`` batch handler: it runs on the runner's event loop."""

SyncBatchHandler = Callable[[Sequence[BatchJob[P, R]]], Sequence[R | Failure | Retry]]
"""A plain ``def`` batch handler: it runs in one of the runner's threads."""


def batch_is_async(where: str, fn: Callable[..., object]) -> bool:
    """Returns whether the batch handler fn is async.

    Raises TypeError, naming where, unless fn takes one positional argument.
    """
    if not callable(fn):
        raise TypeError(f"{where}: handler is not callable")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{where}: cannot read the handler's signature: {err}") from err
    params = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) != 1:
        raise TypeError(
            f"{where}: a batch kind's handler takes one argument, the sequence of jobs "
            f"(def handler(jobs)); it takes {len(params)}"
        )
    call = getattr(fn, "__call__", None)  # noqa: B004 (an async __call__ counts)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


class WrongCount(Exception):
    """A batch handler returned other than one outcome per job: every job of the call fails."""


_Waiting = tuple[BatchJob[Any, Any], "asyncio.Future[Any]"]


class _Gathering:
    """The jobs waiting for one call of a kind's handler, and the timer that ends their wait."""

    __slots__ = ("handler", "items", "timer")

    def __init__(self, handler: tuple[Callable[..., Any], bool]) -> None:
        self.handler = handler
        self.items: list[_Waiting] = []
        self.timer: asyncio.TimerHandle | None = None


class Batches:
    """Gathers the jobs of batch kinds and calls each kind's handler once per batch.

    A batch is called when it holds its kind's size, or as many jobs as its
    queue has workers (no more could join), or max_wait after its first job
    joined, or as soon as the runner's stop began. Outside a started runner
    (``run_next``) a batch holds one job. The call runs in a task of its
    own; each job's worker awaits only its own outcome, so a job whose
    attempt ends early (a cancel, a timeout) leaves the call to the
    others, and the call is cancelled once no job waits for it.
    """

    def __init__(self, stop: Stop) -> None:
        self._stop = stop
        # One gathering a kind and batch key (None: a batch without by).
        self._gathering: dict[tuple[str, Any], _Gathering] = {}
        self._calls: set[asyncio.Task[None]] = set()
        self.slots: dict[str, int] = {}
        """The workers of each queue, once the runner started."""
        self.threads: Any = None
        """Where a plain batch handler runs (None: the loop's default executor)."""

    def flush(self) -> None:
        """Calls every batch gathering now, with the jobs it has: the runner stops.

        No job joins once stop began, and the claimed jobs should run within
        the grace period rather than wait out max_wait.
        """
        for slot, gathering in list(self._gathering.items()):
            self._call(slot, *gathering.handler)

    def _size(self, batch: Batch, queue: str) -> int:
        return max(1, min(batch.size, self.slots.get(queue, 1)))

    async def join(
        self, kind: str, queue: str, handler: tuple[Batch, Callable[..., Any], bool], job: Any
    ) -> Any:
        """Adds job (a BatchJob) to the batch gathering for kind and returns its outcome.

        Raises the job's ``Failure`` or ``Retry``, or what the call raised
        (or what computing its batch key raised). handler is the kind's
        batch, its handler and whether that is async. A batch keyed by
        ``Batch.by`` gathers the jobs of one key only.
        """
        batch, fn, is_async = handler
        slot = (kind, batch_key(batch, job.payload))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        gathering = self._gathering.get(slot)
        if gathering is None:
            gathering = self._gathering[slot] = _Gathering((fn, is_async))
            wait = batch.max_wait.total_seconds()
            gathering.timer = loop.call_later(wait, self._call, slot, fn, is_async)
        gathering.items.append((job, future))
        if len(gathering.items) >= self._size(batch, queue) or self._stop.is_set():
            self._call(slot, fn, is_async)
        return await future

    def _call(self, slot: tuple[str, Any], fn: Callable[..., Any], is_async: bool) -> None:
        """Ends the gathering of slot's batch (kind, key); calls it with the jobs still waiting."""
        kind = slot[0]
        gathering = self._gathering.pop(slot, None)
        if gathering is None:
            return
        if gathering.timer is not None:
            gathering.timer.cancel()
        items = [(job, future) for job, future in gathering.items if not future.done()]
        if not items:
            return
        task = asyncio.get_running_loop().create_task(
            self._run(items, fn, is_async), name=f"jobtable-batch-{kind}"
        )
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        unwaited = _Unwaited(task, len(items))
        for _, future in items:
            future.add_done_callback(unwaited.one)

    async def _run(self, items: list[_Waiting], fn: Callable[..., Any], is_async: bool) -> None:
        """Calls fn with the jobs of items and hands each its outcome, or the call's error."""
        jobs = [job for job, _ in items]
        try:
            if is_async:
                outcomes = await fn(jobs)
            else:
                loop = asyncio.get_running_loop()
                outcomes = await loop.run_in_executor(self.threads, fn, jobs)
            outcomes = _one_each(outcomes, len(jobs))
        except asyncio.CancelledError:
            for _, future in items:
                future.cancel()
            raise
        except BaseException as err:
            for _, future in items:
                if not future.done():
                    future.set_exception(err)
            if not isinstance(err, Exception):
                raise
            return
        for (_, future), outcome in zip(items, outcomes, strict=True):
            if future.done():
                continue
            if isinstance(outcome, (Failure, Retry)):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)


def _one_each(outcomes: object, count: int) -> Sequence[Any]:
    """outcomes, checked to be a sequence of count outcomes; raises WrongCount otherwise."""
    if not isinstance(outcomes, Sequence) or isinstance(outcomes, (str, bytes)):
        raise WrongCount(
            f"a batch handler must return a sequence of outcomes, got {type(outcomes).__name__}"
        )
    if len(outcomes) != count:
        raise WrongCount(
            f"a batch handler must return one outcome per job: {count} jobs, "
            f"{len(outcomes)} outcomes"
        )
    return outcomes


class _Unwaited:
    """Cancels a batch's call once every job of it has its outcome or stopped waiting."""

    __slots__ = ("_left", "_task")

    def __init__(self, task: "asyncio.Task[None]", jobs: int) -> None:
        self._task = task
        self._left = jobs

    def one(self, _: "asyncio.Future[Any]") -> None:
        """Counts one job's future done; cancels the call when it was the last."""
        self._left -= 1
        if self._left == 0 and not self._task.done():
            self._task.cancel()


class AttachBatch(Generic[P, R]):
    """The decorator ``Runner.handler(batch_kind)`` returns: attaches the batch handler."""

    __slots__ = ("_attach", "_name")

    def __init__(self, name: str, attach: Callable[[Callable[..., Any]], None]) -> None:
        self._name = name
        self._attach = attach

    @overload
    def __call__(self, fn: AsyncBatchHandler[P, R]) -> AsyncBatchHandler[P, R]: ...
    @overload
    def __call__(self, fn: SyncBatchHandler[P, R]) -> SyncBatchHandler[P, R]: ...
    def __call__(
        self, fn: AsyncBatchHandler[P, R] | SyncBatchHandler[P, R]
    ) -> AsyncBatchHandler[P, R] | SyncBatchHandler[P, R]:
        """Attaches fn as the kind's batch handler and returns it unchanged."""
        self._attach(cast(Callable[..., Any], fn))
        return fn
