"""A runner's hooks: middleware around each attempt, and callbacks on each attempt's outcome.

``Runner.hooks`` holds them. Attempt hooks wrap the handler in the order
added (the first added is outermost: it enters first and exits last); outcome
hooks run in the order added, after the outcome is decided and before it is
stored. A hook's exception text is never stored: an attempt hook's fails the
attempt as a handler's would (``MESSAGE_INTERNAL``, logged); an outcome
hook's is logged and changes nothing, since the outcome was decided.
"""

import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Literal, TypeAlias, cast

from jobtable._engines.rows import ClaimedRow
from jobtable._runner.context import JobContext
from jobtable._runner.run_operations import Finish
from jobtable._runner.shared import JobLogger

CallNext: TypeAlias = Callable[[], Awaitable[Any]]
"""Runs the rest of the attempt (the later hooks, then the handler) and returns its result."""

Middleware: TypeAlias = Callable[[JobContext[Any], CallNext], Awaitable[Any]]
"""An ``async def hook(ctx, call_next)`` that returns ``await call_next()``'s result."""

ContextHook: TypeAlias = Callable[
    [JobContext[Any]], AbstractContextManager[Any] | AbstractAsyncContextManager[Any]
]
"""A plain ``def hook(ctx)`` returning a context manager (sync or async) to enter around it."""

AttemptHook: TypeAlias = Middleware | ContextHook
"""An attempt hook: a ``Middleware`` (a coroutine function) or a ``ContextHook``."""

OutcomeName = Literal["succeeded", "failed", "retried", "cancelled", "interrupted"]


@dataclasses.dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """How one attempt ended, as outcome hooks see it: only what is stored, never exception text.

    Args:
        id: The job's id.
        kind: The job's kind.
        attempt: The attempt's number.
        outcome: ``succeeded``, ``failed`` (finally), ``retried`` (the job is
            queued again: the attempt failed with attempts left, or the
            handler asked for a retry), ``cancelled``, or ``interrupted``
            (the runner stopped while the handler ran; the job is failed as
            interrupted at the next start).
        error: The stored message of a failed or retried attempt; None
            otherwise.
    """

    id: str
    kind: str
    attempt: int
    outcome: OutcomeName
    error: str | None

    @classmethod
    def of(cls, job: ClaimedRow, finish: Finish | None) -> "AttemptOutcome":
        """The outcome of job's attempt that ended with finish.

        Args:
            job: The claimed job.
            finish: How the attempt ended; None when the runner's stop interrupted it.

        Returns:
            The outcome, as outcome hooks see it.
        """
        if finish is None:
            return cls(job.id, job.kind, job.attempt, "interrupted", None)
        state = finish.outcome.state
        name: OutcomeName = "retried" if state == "queued" else state  # type: ignore[assignment]
        return cls(job.id, job.kind, job.attempt, name, finish.outcome.error)


OutcomeHook: TypeAlias = Callable[[AttemptOutcome], Awaitable[None] | None]
"""A ``def`` or ``async def hook(outcome)``; what it returns is ignored."""


def _is_async(fn: object) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 (an async __call__ counts)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _middleware(hook: AttemptHook) -> Middleware:
    """hook as a middleware: a context hook enters its context manager around call_next."""
    if _is_async(hook):
        return cast(Middleware, hook)
    context_hook = cast(ContextHook, hook)

    async def around(ctx: JobContext[Any], call_next: CallNext) -> Any:
        manager = context_hook(ctx)
        if isinstance(manager, AbstractAsyncContextManager):
            async with manager:
                return await call_next()
        if isinstance(manager, AbstractContextManager):
            with manager:
                return await call_next()
        raise TypeError(
            f"attempt hook {hook!r} returned {type(manager).__name__}, not a context manager"
        )

    return around


class RunnerHooks:
    """The hooks of one runner; each tuple is replaced whole, so an attempt sees one snapshot."""

    def __init__(self) -> None:
        self._attempt: tuple[Middleware, ...] = ()
        self._outcome: tuple[tuple[OutcomeHook, bool], ...] = ()

    def __bool__(self) -> bool:
        return bool(self._attempt or self._outcome)

    def around_attempt(self, hook: AttemptHook) -> AttemptHook:
        """Wraps each attempt in hook, inside the hooks added before; returns hook (a decorator).

        It runs on the event loop, before a plain handler's thread starts, whose
        context (contextvars) it can set.

        Args:
            hook: ``async def hook(ctx, call_next)``, which must return
                ``await call_next()``'s result, or ``def hook(ctx)`` returning a
                context manager (sync or async, e.g. ``contextlib.contextmanager``).

        Returns:
            hook, unchanged.

        Raises:
            TypeError: hook is not callable.
        """
        if not callable(hook):
            raise TypeError(f"Runner.hooks.around_attempt: {hook!r} is not callable")
        self._attempt = (*self._attempt, _middleware(hook))
        return hook

    def on_outcome(self, hook: OutcomeHook) -> OutcomeHook:
        """Calls hook with each attempt's ``AttemptOutcome``, after the hooks added before.

        It runs before the outcome is stored and cannot change it; its exception is
        logged.

        Args:
            hook: A ``def`` or an ``async def`` (awaited on the event loop) taking
                the ``AttemptOutcome``.

        Returns:
            hook, unchanged (a decorator).

        Raises:
            TypeError: hook is not callable.
        """
        if not callable(hook):
            raise TypeError(f"Runner.hooks.on_outcome: {hook!r} is not callable")
        self._outcome = (*self._outcome, (hook, _is_async(hook)))
        return hook

    async def around(self, ctx: JobContext[Any], call: CallNext) -> Any:
        """Runs call (the handler) inside every attempt hook, the first added outermost.

        Args:
            ctx: The attempt's context.
            call: Runs the handler.

        Returns:
            What the handler returned, through the hooks.
        """
        chain = call
        for hook in reversed(self._attempt):
            chain = _link(hook, ctx, chain)
        return await chain()

    async def ended(self, logger: logging.Logger, outcome: AttemptOutcome) -> None:
        """Calls every outcome hook with outcome; logs, and otherwise ignores, what one raises.

        Args:
            logger: Where a hook's exception is logged.
            outcome: How the attempt ended.
        """
        for hook, is_async in self._outcome:
            try:
                returned = hook(outcome)
                if is_async and returned is not None:
                    await returned
            except Exception:
                JobLogger(logger, outcome.id, outcome.kind, outcome.attempt).exception(
                    "outcome hook failed"
                )


def _hook_name(hook: object) -> str:
    """hook as a log names it: its module and qualified name, else its repr."""
    name = getattr(hook, "__qualname__", None)
    module = getattr(hook, "__module__", None)
    if not isinstance(name, str):
        return repr(hook)
    return f"{module}.{name}" if isinstance(module, str) else name


_NOT_YET = object()


def _link(hook: Middleware, ctx: JobContext[Any], call_next: CallNext) -> CallNext:
    """hook around call_next, for one attempt: call_next runs at most once, and its result is kept.

    A second call_next() raises RuntimeError before the rest runs again; a
    hook that returns None where call_next() returned a value raises
    TypeError naming the hook, instead of the result failing as mistyped.
    """

    async def step() -> Any:
        inner: object = _NOT_YET

        async def once() -> Any:
            nonlocal inner
            if inner is not _NOT_YET:
                raise RuntimeError(
                    f"attempt hook {_hook_name(hook)} called call_next() a second time in one "
                    f"attempt: the handler runs once per attempt (to run it again, raise "
                    f"jobtable.Retry or let the attempt fail with attempts left)"
                )
            inner = None  # called, even if the rest raises
            inner = await call_next()
            return inner

        result = await hook(ctx, once)
        if result is None and inner is not None and inner is not _NOT_YET:
            raise TypeError(
                f"attempt hook {_hook_name(hook)} returned None though call_next() returned "
                f"a {type(inner).__name__}: the hook must end with `return await call_next()`"
            )
        return result

    return step
