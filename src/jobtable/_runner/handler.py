"""Handlers attached to kinds: the function that runs a kind's jobs, one at a time or in batches.

A batch kind's handler gets the gathered jobs of one call and returns an
outcome per job (``Batches``, ``AttachBatch``).
"""

import asyncio
import dataclasses
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar, cast, get_origin, overload

from jobtable._batch import Batch, BatchKind, batch_key
from jobtable._codec import Codec
from jobtable._errors import Failure, Retry, RunnerError
from jobtable._kind import Kind
from jobtable._labels import Labels
from jobtable._options import RetryPolicy
from jobtable._runner.context import JobContext
from jobtable._runner.hooks import RunnerHooks
from jobtable._runner.shared import Stop

P = TypeVar("P")
R = TypeVar("R")

AsyncHandler = Callable[[JobContext[R], P], Awaitable[R]]
"""An ``async def`` handler: it runs on the runner's event loop."""

SyncHandler = Callable[[JobContext[R], P], R]
"""A plain ``def`` handler: it runs in one of the runner's threads."""


class Handler(Generic[P, R]):
    """A handler with its kind's codec: runs one job from stored JSON to stored JSON.

    batch is the kind's ``Batch`` when fn is a batch handler, which takes a
    sequence of ``BatchJob`` and returns one outcome per job.
    """

    __slots__ = ("batch", "codec", "fn", "is_async", "labels", "retry")

    def __init__(
        self,
        fn: AsyncHandler[R, P] | SyncHandler[R, P],
        codec: Codec[P, R],
        is_async: bool,
        retry: RetryPolicy,
        labels: Labels | None = None,
        batch: Batch | None = None,
    ) -> None:
        self.batch = batch
        self.labels = labels
        self.fn = fn
        self.codec = codec
        self.is_async = is_async
        self.retry = retry


def _parameters(
    where: str, handler: Callable[..., object], *, eval_str: bool
) -> tuple[inspect.Signature, list[inspect.Parameter]]:
    if not callable(handler):
        raise TypeError(f"{where}: handler is not callable")
    try:
        signature = inspect.signature(handler, eval_str=eval_str)
    except (NameError, TypeError, ValueError) as err:
        raise TypeError(f"{where}: cannot read the handler's annotations: {err}") from err
    params = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) != 2:
        raise TypeError(
            f"{where}: the handler must take (ctx, payload), it takes {len(params)} arguments"
        )
    return signature, params


def is_async(where: str, handler: Callable[..., object]) -> bool:
    """Returns whether handler is async.

    Raises TypeError, naming where, unless it takes (ctx, payload).
    """
    _parameters(where, handler, eval_str=False)
    call = getattr(handler, "__call__", None)  # noqa: B004 (an async __call__ counts)
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


def check_order(where: str, handler: Callable[..., object], payload_type: object) -> None:
    """Raises TypeError, naming where, when handler's annotations say it takes (payload, ctx).

    Annotations that cannot be read prove nothing: mypy is the full check.
    """
    try:
        _, (first, second) = _parameters(where, handler, eval_str=True)
    except TypeError:
        return
    context = second.annotation is JobContext or get_origin(second.annotation) is JobContext
    if context or (first.annotation is payload_type and payload_type is not object):
        raise TypeError(
            f"{where}: the handler takes ({first.name}, {second.name}) as (payload, ctx); "
            f"a handler takes the JobContext first, then the payload: def handler(ctx, payload)"
        )


def annotated_types(where: str, handler: Callable[..., object]) -> tuple[type, type]:
    """Returns the payload and result types of handler, from its annotations.

    Raises TypeError, naming where, when one is missing or cannot be read.
    """
    signature, params = _parameters(where, handler, eval_str=True)
    payload_type = params[1].annotation
    if payload_type is inspect.Parameter.empty:
        raise TypeError(
            f"{where}: the handler's payload parameter {params[1].name!r} has no type annotation"
        )
    result_type = signature.return_annotation
    if result_type is inspect.Signature.empty:
        raise TypeError(f"{where}: the handler has no return annotation")
    return payload_type, result_type


class Handlers:
    """A runner's handlers by kind name, closed to additions once the runner starts.

    queues are the runner's: a kind whose default queue is not one of them
    is refused, since its jobs would wait for ever.
    """

    def __init__(self, queues: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._queues = list(queues)
        self._by_kind: dict[str, Handler[Any, Any]] = {}
        self._queue_of: dict[str, str] = {}
        self.hooks = RunnerHooks()
        """The runner's attempt and outcome hooks (``Runner.hooks``)."""
        self._closed = False

    def attach(self, where: str, kind: Kind[P, R], fn: Callable[..., Any]) -> None:
        """Makes fn the handler of kind.

        Raises RunnerError, naming where, once closed, when kind has one, or
        when kind's default queue is not one of the runner's. fn is a batch
        handler when kind is a ``BatchKind``.
        """
        if isinstance(kind, BatchKind):
            batch_async = batch_is_async(where, fn)
            handler = Handler(fn, kind._codec, batch_async, kind.retry, kind.labels, kind.batch)
        else:
            handler = Handler(fn, kind._codec, is_async(where, fn), kind.retry, kind.labels)
            check_order(where, fn, kind._codec.payload_type)
        queue = kind.options.queue
        if queue not in self._queues:
            raise RunnerError(
                f"{where}: the kind's queue {queue!r} is not one of the runner's queues "
                f"{self._queues}, so its jobs would wait for ever; add it to "
                f"Runner(queues=...), or declare the kind with queue= one of them"
            )
        with self._lock:
            if self._closed:
                raise RunnerError(f"{where}: runner already started")
            if kind.name in self._by_kind:
                raise RunnerError(f"{where}: kind already registered")
            self._by_kind[kind.name] = handler
            self._queue_of[kind.name] = queue

    def close(self) -> bool:
        """Refuses further handlers; returns False when already closed."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            return True

    def reopen(self) -> None:
        """Takes handlers again: the start that closed it failed."""
        with self._lock:
            self._closed = False

    def get(self, kind: str) -> Handler[Any, Any] | None:
        """The handler of kind, or None."""
        return self._by_kind.get(kind)

    def kinds(self) -> Sequence[str]:
        """The kinds that have a handler, sorted."""
        return sorted(self._by_kind)

    def describe(self, queues: dict[str, int]) -> str:
        """Each of queues with its workers and the kinds whose default queue it is, for the log."""
        return "; ".join(
            f"queue {queue!r} ({slots} workers): "
            + (", ".join(k for k in self.kinds() if self._queue_of[k] == queue) or "no kind")
            for queue, slots in queues.items()
        )


class Attach(Generic[P, R]):
    """The decorator ``Runner.handler(kind)`` returns: attaches the function it decorates."""

    __slots__ = ("_handlers", "_kind")

    def __init__(self, handlers: Handlers, kind: Kind[P, R]) -> None:
        self._handlers = handlers
        self._kind = kind

    @overload
    def __call__(self, fn: AsyncHandler[R, P]) -> AsyncHandler[R, P]: ...
    @overload
    def __call__(self, fn: SyncHandler[R, P]) -> SyncHandler[R, P]: ...
    def __call__(
        self, fn: AsyncHandler[R, P] | SyncHandler[R, P]
    ) -> AsyncHandler[R, P] | SyncHandler[R, P]:
        """Attaches fn as the kind's handler and returns it unchanged."""
        self._handlers.attach(f"handler {self._kind.name!r}", self._kind, fn)
        return fn


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
