"""A worker process for test_otel_processes.py: an instrumented ``Runner.run()`` until a signal.

Usage: ``python otel_worker.py TARGET SPANS``

It runs kind ``resize`` (int -> int) on the store at TARGET, with the store
instrumented through an in-memory span exporter; once the runner stopped,
it writes the spans it made to SPANS as JSON, one object per span.
"""

import json
import sys

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import jobtable
import jobtable.otel


async def resize(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload * 2


def main() -> None:
    target, spans = sys.argv[1:]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with jobtable.Store.open(target) as store:
        jobtable.otel.instrument(store, tracer_provider=provider)
        runner = jobtable.Runner(store, workers=1, poll_interval=0.05)
        runner.register("resize", resize)
        runner.run()
    found = []
    for span in exporter.get_finished_spans():
        assert span.context is not None
        found.append(
            {
                "name": span.name,
                "kind": span.kind.name,
                "trace_id": span.context.trace_id,
                "span_id": span.context.span_id,
                "parent_span_id": None if span.parent is None else span.parent.span_id,
                "status": span.status.status_code.name,
            }
        )
    with open(spans, "w", encoding="utf-8") as file:
        json.dump(found, file)


if __name__ == "__main__":
    main()
