"""The seam between jobtable and telemetry: what the enqueue and run paths tell an observer.

The enqueue path and the executor call ``enqueue_trace`` and ``run_trace``
around their work. Unless the store was instrumented (``jobtable.otel``),
both return a shared object that does nothing, after one look at an empty
dict: a process without telemetry pays nothing measurable (no query: the
run traces of a workflow job's dependencies are read only for an
instrumented store), and this module imports no telemetry library.

An observer is told only names jobtable chose (kind, queue, status, ids,
attempt numbers) and the messages the runner stores; never a payload, a
result or an exception's text.
"""

import weakref
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

if TYPE_CHECKING:
    from jobtable._engines.base import Queries
    from jobtable._engines.rows import ClaimedRow, NewJob, Outcome
    from jobtable._store import Store


class Trace(Protocol):
    """A context manager around the work a trace observes."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


class EnqueueTrace(Trace, Protocol):
    """One enqueue of jobs of one kind, observed from before its insert to its commit.

    Used as a context manager around the insert: an exception leaving the
    block marks the enqueue failed (by the exception's type, never its text).
    """

    @property
    def traceparent(self) -> str | None:
        """The W3C trace context to store with each job, or None."""
        ...

    def stored(self, jobs: "Sequence[NewJob]") -> None:
        """The jobs were committed."""
        ...


class RunTrace(Trace, Protocol):
    """One attempt of a claimed job, observed from the claim's hand-over to its outcome.

    Used as a context manager around the attempt; the handler runs inside
    it, so the handler's own spans nest in the attempt's. An exception
    leaving the block (a cancel at the end of the grace period) marks the
    attempt interrupted.
    """

    def ended(self, outcome: "Outcome | None") -> None:
        """The attempt ended with outcome; None: it stays running, interrupted by shutdown."""
        ...

    @property
    def traceparent(self) -> str | None:
        """The attempt's own W3C trace context, stored with its outcome; or None."""
        ...


class Observer(Protocol):
    """What an instrumented store reports to: it makes one trace per enqueue and per attempt."""

    def enqueue(self, kind: str, workflow: "Workflowed | None") -> EnqueueTrace:
        """A trace for one enqueue of jobs of kind, or of a workflow's jobs (kind its name)."""
        ...

    def run(
        self, job: "ClaimedRow", queue: str, dependencies: "Sequence[tuple[str, str]]"
    ) -> RunTrace:
        """A trace for one attempt of job, claimed from queue.

        dependencies are the (id, run trace) of the job's dependencies that
        stored one: the runs it comes after.
        """
        ...

    def current(self) -> str | None:
        """The W3C trace context of the code running now (a handler's: its run's), or None."""
        ...


Workflowed = tuple[str, str]
"""A workflow an enqueue stores the jobs of: its id and name."""


class _Unobserved:
    """The trace of an uninstrumented store: it records nothing and stores no trace context."""

    __slots__ = ()

    traceparent = None

    def stored(self, jobs: "Sequence[NewJob]") -> None:
        pass

    def ended(self, outcome: "Outcome | None") -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pass


_UNOBSERVED = _Unobserved()

_observers: "weakref.WeakKeyDictionary[Store, Observer]" = weakref.WeakKeyDictionary()


def observe(store: "Store", observer: Observer | None) -> Observer | None:
    """Makes observer the one store reports to (None: none); returns the one it replaces."""
    previous = _observers.pop(store, None)
    if observer is not None:
        _observers[store] = observer
    return previous


def enqueue_trace(store: "Store", kind: str, workflow: Workflowed | None = None) -> EnqueueTrace:
    """The trace of an enqueue of kind (or of workflow) through store; a no-op by default."""
    observer = _observers.get(store) if _observers else None
    return _UNOBSERVED if observer is None else observer.enqueue(kind, workflow)


async def run_trace(store: "Store", job: "ClaimedRow", queue: str) -> RunTrace:
    """The trace of an attempt of job from queue of store; one that does nothing by default.

    For a job of a workflow on an instrumented store, it first reads the run
    traces its dependencies stored (one query); otherwise it reads nothing.
    """
    observer = _observers.get(store) if _observers else None
    if observer is None:
        return _UNOBSERVED
    dependencies: list[tuple[str, str]] = []
    if job.workflow_id is not None:
        dependencies = await store.engine.aread(_DependencyTraces(job.id))
    return observer.run(job, queue, dependencies)


class _DependencyTraces:
    """The read of the run traces job_id's dependencies stored, in enqueue order."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id

    def __call__(self, q: "Queries") -> list[tuple[str, str]]:
        return q.dependency_traces(job=self.job_id)


def current_traceparent(store: "Store") -> str | None:
    """The trace context to store with jobs a handler adds through store: None if uninstrumented."""
    observer = _observers.get(store) if _observers else None
    return None if observer is None else observer.current()
