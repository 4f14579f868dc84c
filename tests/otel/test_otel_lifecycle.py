"""Run spans of a started runner: a cancelled attempt, one the grace period ends, and
instrumentation replaced while the store is in use."""

import asyncio
from collections.abc import Awaitable, Callable

from opentelemetry.trace import StatusCode

import jobtable
from otel.conftest import Telemetry

LIMIT = 30.0

WaitUntil = Callable[..., Awaitable[None]]


async def test_a_cancelled_attempt_leaves_its_status_unset_and_counts_its_job_cancelled(
    store: jobtable.Store, telemetry: Telemetry, wait_until: WaitUntil
) -> None:
    long = jobtable.Kind("long", int, int)
    runner = jobtable.Runner(store, workers=1, cancel_check=0.05)
    started = asyncio.Event()

    @runner.handler(long)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        started.set()
        await asyncio.sleep(3600)
        return payload

    job_id = long.enqueue(store, 1)
    await runner.start()
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        store.cancel(job_id)
        await wait_until(lambda: bool(telemetry.spans("run long")), limit=LIMIT)
    finally:
        runner.stop()
        await runner.wait()

    run = telemetry.span("run long")
    assert run.status.status_code is StatusCode.UNSET
    assert (run.attributes or {})["jobtable.attempt.outcome"] == "cancelled"
    [(attributes, count)] = telemetry.points("jobtable.jobs.finished").items()
    assert ("jobtable.job.status", "cancelled") in attributes
    assert count == 1


async def test_an_attempt_cancelled_at_the_end_of_the_grace_period_ends_interrupted(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    stuck = jobtable.Kind("stuck", int, int)
    runner = jobtable.Runner(store, workers=1, grace_period=0.05)
    started = asyncio.Event()

    @runner.handler(stuck)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        started.set()
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise

    stuck.enqueue(store, 1)
    await runner.start()
    await asyncio.wait_for(started.wait(), LIMIT)
    runner.stop()
    await runner.wait()

    run = telemetry.span("run stuck")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == jobtable.MESSAGE_INTERRUPTED
    assert (run.attributes or {})["jobtable.attempt.outcome"] == "interrupted"
    assert telemetry.points("jobtable.jobs.finished") == {}


async def test_a_run_inside_another_span_keeps_its_enqueue_as_parent_and_links_both(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store)

    async def one(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    runner.register("one", one)
    jobtable.Kind("one", int, int).enqueue(store, 1)
    tracer = telemetry.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("test step") as step:
        await runner.run_next()

    enqueue, run = telemetry.span("enqueue one"), telemetry.span("run one")
    assert enqueue.context is not None
    assert run.parent is not None
    assert run.parent.span_id == enqueue.context.span_id
    assert [link.context.span_id for link in run.links] == [
        enqueue.context.span_id,
        step.get_span_context().span_id,
    ]


async def test_instrumenting_a_store_again_replaces_its_providers(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    other = Telemetry()
    other.instrument(store)
    jobtable.Kind("one", int, int).enqueue(store, 1)

    assert telemetry.spans() == []
    assert [span.name for span in other.spans()] == ["enqueue one"]
    assert telemetry.points("jobtable.queue.depth") == {}
    assert len(other.points("jobtable.queue.depth")) == 1
