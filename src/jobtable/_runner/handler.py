"""A handler attached to a kind: the function that runs its jobs, and how to call it."""

import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar, get_origin, overload

from jobtable._batch import Batch, BatchKind
from jobtable._codec import Codec
from jobtable._errors import RunnerError
from jobtable._kind import Kind
from jobtable._labels import Labels
from jobtable._options import RetryPolicy
from jobtable._runner.batch import batch_is_async
from jobtable._runner.context import JobContext
from jobtable._runner.hooks import RunnerHooks

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
