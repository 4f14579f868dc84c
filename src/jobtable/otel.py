"""OpenTelemetry spans and metrics for jobtable's enqueues and attempts (the jobtable[otel] extra).

``jobtable.otel.instrument(store)`` makes every enqueue through the store
and every attempt a runner on it runs report to OpenTelemetry: through the
global tracer and meter providers, or the ones given. Nothing is reported
for a store that was not instrumented, and jobtable never imports
OpenTelemetry unless this module is imported.

Spans follow the OpenTelemetry messaging conventions: ``enqueue <kind>``
(PRODUCER, operation type ``send``) stores its W3C trace context with each
job it inserts, and ``run <kind>`` (CONSUMER, operation type ``process``),
one per attempt, continues that trace as a child of the enqueue (or, with
``run_parent=False``, starts its own and links to it). A workflow's spans
carry ``jobtable.workflow.id`` (its enqueue span ``jobtable.workflow.name``
too), and a job a handler adds to its workflow runs in the adding run's
trace. A workflow job's run span links to the run span of the last attempt
of each dependency (the link's ``jobtable.dependency.id`` names it), whose
trace context the store keeps with that job's outcome: the links draw the
workflow's graph across traces and processes. Metrics count jobs
enqueued and finished, time each attempt, and observe each queue's backlog.
No payload, result or exception text is ever reported: a span's status
description is the message the runner stores, and an error's type is one of
jobtable's own names.
"""

import time
from collections.abc import Sequence
from importlib import metadata
from types import TracebackType
from typing import Self

from opentelemetry import context, metrics, trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from jobtable import _otel_metrics
from jobtable._engines.rows import ClaimedRow, NewJob, Outcome
from jobtable._job import MESSAGE_INTERNAL, MESSAGE_INTERRUPTED, MESSAGE_TIMED_OUT
from jobtable._store import Store
from jobtable._telemetry import Workflowed, observe

__all__ = ["instrument", "uninstrument"]

_SYSTEM = "jobtable"
_PROPAGATOR = TraceContextTextMapPropagator()
_WORKFLOW_ID = "jobtable.workflow.id"
_WORKFLOW_NAME = "jobtable.workflow.name"
_DEPENDENCY_ID = "jobtable.dependency.id"


def instrument(
    store: Store,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    run_parent: bool = True,
) -> None:
    """Reports the store's enqueues and attempts to OpenTelemetry, from now until uninstrument.

    Every enqueue through store makes an ``enqueue <kind>`` span and stores its
    trace context with the jobs (as a W3C traceparent); every attempt a runner
    on store runs makes a ``run <kind>`` span around the handler, so the
    handler's own spans nest in it. Both processes, the one that enqueues and
    the one that runs, call instrument on their own store. The metrics' queue
    gauges read the store's backlog when the meter provider collects.
    Instrumenting a store again replaces its earlier instrumentation.

    Args:
        store: The store to report on.
        tracer_provider: Makes the spans; None is OpenTelemetry's global one,
            read at each call of instrument.
        meter_provider: Makes the metrics; None is OpenTelemetry's global one,
            read at each call of instrument.
        run_parent: The run span is a child of the enqueue span: one trace from
            the request that enqueued to every attempt. Without it, each attempt
            starts a trace of its own that links to the enqueue span, for jobs
            that run long after they were enqueued.

    Raises:
        TypeError: store is not a Store, or run_parent is not a bool.
    """
    if not isinstance(store, Store):
        raise TypeError(f"instrument: want a Store, got {type(store).__name__}")
    if not isinstance(run_parent, bool):
        raise TypeError(f"instrument: run_parent must be a bool, got {run_parent!r}")
    version = metadata.version("jobtable")
    tracer = trace.get_tracer("jobtable", version, tracer_provider, _otel_metrics.SCHEMA_URL)
    provider = meter_provider or metrics.get_meter_provider()
    instruments = _otel_metrics.instruments_of(provider, version)
    instruments.watch(store)
    previous = observe(store, _Observer(tracer, instruments, run_parent))
    if isinstance(previous, _Observer) and previous.instruments is not instruments:
        previous.instruments.unwatch(store)


def uninstrument(store: Store) -> None:
    """Stops reporting the store's enqueues and attempts; a store not instrumented is left as is.

    Args:
        store: The store instrument was called with.
    """
    previous = observe(store, None)
    if isinstance(previous, _Observer):
        previous.instruments.unwatch(store)


class _Observer:
    """Makes the spans and records the metrics of one instrumented store."""

    __slots__ = ("instruments", "run_parent", "tracer")

    def __init__(
        self, tracer: trace.Tracer, instruments: _otel_metrics.Instruments, run_parent: bool
    ) -> None:
        self.tracer = tracer
        self.instruments = instruments
        self.run_parent = run_parent

    def enqueue(self, kind: str, workflow: Workflowed | None) -> "_EnqueueTrace":
        return _EnqueueTrace(self, kind, workflow)

    def run(
        self, job: ClaimedRow, queue: str, dependencies: Sequence[tuple[str, str]]
    ) -> "_RunTrace":
        return _RunTrace(self, job, queue, dependencies)

    def current(self) -> str | None:
        return _traceparent(trace.get_current_span().get_span_context())


def _error_type(message: str) -> str:
    """A low-cardinality name for why an attempt failed, from the message the runner stores."""
    if message == MESSAGE_INTERNAL:
        return "internal"
    if message == MESSAGE_TIMED_OUT:
        return "timeout"
    if message == MESSAGE_INTERRUPTED:
        return "interrupted"
    if message.startswith("no handler for job kind "):
        return "no_handler"
    return "failure"


def _span_context(traceparent: str | None) -> trace.SpanContext:
    """The span a stored W3C traceparent names; an invalid one for None or a malformed text."""
    carrier = {} if traceparent is None else {"traceparent": traceparent}
    return trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()


def _traceparent(span: trace.SpanContext) -> str | None:
    """span's W3C traceparent (version 00), or None for an invalid span (a no-op tracer's)."""
    if not span.is_valid:
        return None
    return f"00-{span.trace_id:032x}-{span.span_id:016x}-{span.trace_flags:02x}"


class _Trace:
    """A span made current from enter to exit, and ended at exit."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: trace.Span) -> None:
        self._span = span
        self._token: object = None

    def __enter__(self) -> Self:
        self._token = context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self._closing(exc_type)
        finally:
            context.detach(self._token)  # type: ignore[arg-type]
            self._span.end()

    def _closing(self, exc_type: type[BaseException] | None) -> None:
        """Records how the work ended, exc_type if it raised, before the span ends."""


class _EnqueueTrace(_Trace):
    """The ``enqueue <kind>`` span of one enqueue, and the enqueued counter."""

    __slots__ = ("_kind", "_observer", "traceparent")

    def __init__(self, observer: _Observer, kind: str, workflow: Workflowed | None) -> None:
        attributes: dict[str, AttributeValue] = {
            "messaging.system": _SYSTEM,
            "messaging.operation.name": "enqueue",
            "messaging.operation.type": "send",
            "jobtable.job.kind": kind,
        }
        if workflow is not None:
            # Every job of the workflow is stored by this one span: its parent.
            attributes[_WORKFLOW_ID], attributes[_WORKFLOW_NAME] = workflow
        super().__init__(
            observer.tracer.start_span(
                f"enqueue {kind}", kind=trace.SpanKind.PRODUCER, attributes=attributes
            )
        )
        self._observer = observer
        self._kind = kind
        self.traceparent = _traceparent(self._span.get_span_context())

    def stored(self, jobs: Sequence[NewJob]) -> None:
        if not jobs:
            return
        queue = jobs[0].queue
        self._span.set_attribute("messaging.destination.name", queue)
        if len(jobs) == 1:
            self._span.set_attribute("messaging.message.id", jobs[0].id)
        else:
            self._span.set_attribute("messaging.batch.message_count", len(jobs))
        self._observer.instruments.enqueued(self._kind, queue, len(jobs))

    def _closing(self, exc_type: type[BaseException] | None) -> None:
        if exc_type is not None:
            # The exception's text may quote the payload: only its type is reported.
            self._span.set_attribute("error.type", exc_type.__qualname__)
            self._span.set_status(trace.StatusCode.ERROR)


class _RunTrace(_Trace):
    """The ``run <kind>`` span of one attempt, and its duration and outcome metrics."""

    __slots__ = ("_kind", "_observer", "_outcome", "_queue", "_started", "traceparent")

    def __init__(
        self,
        observer: _Observer,
        job: ClaimedRow,
        queue: str,
        dependencies: Sequence[tuple[str, str]],
    ) -> None:
        created = _span_context(job.traceparent)
        links = [trace.Link(created)] if created.is_valid else []
        parent = None
        if observer.run_parent and created.is_valid:
            parent = trace.set_span_in_context(trace.NonRecordingSpan(created), context.Context())
            ambient = trace.get_current_span().get_span_context()
            if ambient.is_valid:
                # The run is not a child of the span it runs in: keep that relation as a link.
                links.append(trace.Link(ambient))
        for dep, traceparent in dependencies:
            # The run of each dependency: the workflow's edges, across traces.
            ran = _span_context(traceparent)
            if ran.is_valid:
                links.append(trace.Link(ran, {_DEPENDENCY_ID: dep}))
        attributes: dict[str, AttributeValue] = {
            "messaging.system": _SYSTEM,
            "messaging.operation.name": "run",
            "messaging.operation.type": "process",
            "messaging.destination.name": queue,
            "messaging.message.id": job.id,
            "jobtable.job.kind": job.kind,
            "jobtable.job.attempt": job.attempt,
        }
        if job.workflow_id is not None:
            attributes[_WORKFLOW_ID] = job.workflow_id
        super().__init__(
            observer.tracer.start_span(
                f"run {job.kind}",
                context=parent,
                kind=trace.SpanKind.CONSUMER,
                attributes=attributes,
                links=links,
            )
        )
        self._observer = observer
        self._kind = job.kind
        self._queue = queue
        # None until ended: an attempt that leaves without an outcome was interrupted.
        self._outcome: str | None = None
        self._started = time.perf_counter()
        self.traceparent = _traceparent(self._span.get_span_context())

    def ended(self, outcome: Outcome | None) -> None:
        if outcome is None:
            self._failed("interrupted", MESSAGE_INTERRUPTED)
            return
        state, error = outcome.state, outcome.error
        if state == "succeeded":
            self._span.set_status(trace.StatusCode.OK)
            self._end_as("succeeded")
        elif error is not None:
            self._failed("failed" if state == "failed" else "retried", error)
        else:
            # Cancelled on request, or a later attempt the handler asked for: no error.
            self._end_as(state if state == "cancelled" else "snoozed")

    def _failed(self, outcome: str, message: str) -> None:
        """The attempt failed with message, the text the runner stores: the span's description."""
        self._span.set_attribute("error.type", _error_type(message))
        self._span.set_status(trace.StatusCode.ERROR, message)
        self._end_as(outcome)

    def _end_as(self, outcome: str) -> None:
        self._outcome = outcome
        self._span.set_attribute("jobtable.attempt.outcome", outcome)

    def _closing(self, exc_type: type[BaseException] | None) -> None:
        outcome = self._outcome
        if outcome is None:
            # Cancelled at the end of the grace period: the job stays running.
            outcome = "interrupted"
            self._failed(outcome, MESSAGE_INTERRUPTED)
        elapsed = time.perf_counter() - self._started
        self._observer.instruments.attempted(self._kind, self._queue, outcome, elapsed)
