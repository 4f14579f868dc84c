"""What OpenTelemetry costs a job: enqueue and run with the store instrumented or not.

Each round enqueues N jobs one a call and drains them with one worker, on a
fresh SQLite store, not durable so that jobtable's own cost weighs the most
(the spans and metrics cost the same on either engine:
they are made in the process), once per setting, in turn (so load on the machine falls on all
alike): not instrumented; instrumented with OpenTelemetry's no-op providers
(the API alone, no SDK); instrumented with the SDK (a batch span processor
that drops its spans, a meter provider with an in-memory reader). It prints
each setting's median jobs per second and its ratio to the uninstrumented
one measured in the same run, and the time the hooks take per call when no
store is instrumented, beside the time of one enqueue.

    .venv/bin/python -m bench.otel                   # 2000 jobs, 5 rounds
    .venv/bin/python -m bench.otel --jobs 1000 --rounds 3
"""

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider

import jobtable
import jobtable.otel
from jobtable import _telemetry

KIND = jobtable.Kind("bench_otel", int, int)


class _Dropped(SpanExporter):
    """An exporter that takes every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _none(store: jobtable.Store) -> Callable[[], None]:
    return lambda: None


def _noop(store: jobtable.Store) -> Callable[[], None]:
    jobtable.otel.instrument(
        store, tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider()
    )
    return lambda: jobtable.otel.uninstrument(store)


def _sdk(store: jobtable.Store) -> Callable[[], None]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    jobtable.otel.instrument(store, tracer_provider=tracer_provider, meter_provider=meter_provider)

    def done() -> None:
        jobtable.otel.uninstrument(store)
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return done


SETTINGS: list[tuple[str, Callable[[jobtable.Store], Callable[[], None]]]] = [
    ("not instrumented", _none),
    ("instrumented, API only (no-op providers)", _noop),
    ("instrumented, SDK", _sdk),
]


async def _drain(store: jobtable.Store, jobs: int) -> float:
    """Seconds one worker takes to run jobs jobs and store their outcomes."""
    runner = jobtable.Runner(store, workers=1, retention=None)
    ran = 0
    last = asyncio.Event()

    async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
        nonlocal ran
        ran += 1
        if ran == jobs:
            last.set()
        return payload * 2

    runner.handler(KIND)(double)
    started = time.perf_counter()
    await runner.start()
    await last.wait()
    runner.stop()
    await runner.wait()  # stores the last outcomes
    return time.perf_counter() - started


def _round(
    target: str, setting: Callable[[jobtable.Store], Callable[[], None]], jobs: int
) -> float:
    """Jobs per second of enqueueing then draining jobs on a fresh store at target."""
    with jobtable.Store.open(target, durable=False) as store:
        done = setting(store)
        try:
            started = time.perf_counter()
            for i in range(jobs):
                KIND.enqueue(store, i)
            enqueued = time.perf_counter() - started
            drained = asyncio.run(_drain(store, jobs))
        finally:
            done()
    return jobs / (enqueued + drained)


def _hook_cost(target: str, calls: int = 200_000) -> tuple[float, float]:
    """Nanoseconds per uninstrumented hook pair, and microseconds per uninstrumented enqueue."""
    with jobtable.Store.open(target, durable=False) as store:
        started = time.perf_counter()
        for _ in range(calls):
            with _telemetry.enqueue_trace(store, "k") as trace:
                trace.stored(())
        hooks = (time.perf_counter() - started) / calls * 1e9
        started = time.perf_counter()
        for i in range(1000):
            KIND.enqueue(store, i)
        enqueue = (time.perf_counter() - started) / 1000 * 1e6
    return hooks, enqueue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name, _ in SETTINGS}
    with tempfile.TemporaryDirectory() as folder:
        for n in range(args.rounds):
            for i, (name, setting) in enumerate(SETTINGS):
                target = os.path.join(folder, f"round{n}-{i}.db")
                rates[name].append(_round(target, setting, args.jobs))
        hooks, enqueue = _hook_cost(os.path.join(folder, "hooks.db"))
    base = statistics.median(rates[SETTINGS[0][0]])
    print(f"SQLite, {args.jobs} jobs a round, median of {args.rounds} rounds")
    print(f"{'setting':45} {'jobs/s':>8} {'vs not instrumented':>20}")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:45} {median:8.0f} {median / base:19.2f}x")
    print(
        f"hooks when no store is instrumented: {hooks:.0f} ns per enqueue "
        f"(an enqueue takes {enqueue:.0f} us: {hooks / 1000 / enqueue:.2%})"
    )


if __name__ == "__main__":
    main()
