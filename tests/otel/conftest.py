"""Fixtures of the OpenTelemetry tests: an SDK tracer and meter provider whose data stay in memory.

Each test gets its own providers, passed to ``jobtable.otel.instrument``: the
global ones can be set once per process, and the tests must not share spans.
"""

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import jobtable
import jobtable.otel


class Telemetry:
    """The spans and metrics an instrumented store reported."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def instrument(self, store: jobtable.Store, *, run_parent: bool = True) -> None:
        jobtable.otel.instrument(
            store,
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            run_parent=run_parent,
        )

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """The finished spans, in the order they ended; only those called name, if given."""
        found = self.exporter.get_finished_spans()
        return [s for s in found if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called name."""
        [found] = self.spans(name)
        return found

    def points(self, metric: str) -> dict[frozenset[tuple[str, object]], object]:
        """The data points of metric, by their attributes: a sum's or gauge's value, or a
        histogram's count."""
        data = self.reader.get_metrics_data()
        points: dict[frozenset[tuple[str, object]], object] = {}
        if data is None:
            return points
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name != metric:
                        continue
                    for point in m.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = getattr(point, "count", None)
                        points[frozenset((point.attributes or {}).items())] = value
        return points

    def text(self) -> str:
        """Every span and every metric as JSON: where a leaked secret would show."""
        spans = [s.to_json() for s in self.exporter.get_finished_spans()]
        data = self.reader.get_metrics_data()
        metrics = "" if data is None else data.to_json()
        return json.dumps(spans) + "\n".join(spans) + metrics


def ids_of(span: ReadableSpan) -> tuple[int, int]:
    """span's trace and span ids."""
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


@pytest.fixture
def telemetry(store: jobtable.Store) -> Iterator[Telemetry]:
    """The test's store, instrumented with in-memory providers until the test ends."""
    found = Telemetry()
    found.instrument(store)
    yield found
    jobtable.otel.uninstrument(store)
    found.tracer_provider.shutdown()
    found.meter_provider.shutdown()
