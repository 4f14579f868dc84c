"""The spans of an instrumented store: enqueue <kind> and run <kind>, on both engines.

A run continues its enqueue's trace through the traceparent stored with the
job; its status says how the attempt ended, with the stored message only.
"""

import asyncio
import datetime

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

import jobtable
import jobtable.otel
from jobtable._engines.rows import NewJob
from otel.conftest import Telemetry, ids_of


class Photo(BaseModel):
    photo_id: str
    size: int


photo = jobtable.Kind("photo", Photo, int, queue="media")


async def size_of(ctx: jobtable.JobContext[int], payload: Photo) -> int:
    return payload.size


async def test_an_enqueue_makes_a_producer_span_with_the_messaging_attributes(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    job_id = await photo.aenqueue(store, Photo(photo_id="p1", size=3))

    span = telemetry.span("enqueue photo")
    assert span.kind is SpanKind.PRODUCER
    assert dict(span.attributes or {}) == {
        "messaging.system": "jobtable",
        "messaging.operation.name": "enqueue",
        "messaging.operation.type": "send",
        "messaging.destination.name": "media",
        "messaging.message.id": job_id,
        "jobtable.job.kind": "photo",
    }
    assert span.status.status_code is StatusCode.UNSET


async def test_enqueue_many_makes_one_span_that_counts_its_jobs(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    photo.enqueue_many(store, [Photo(photo_id=str(i), size=i) for i in range(3)], queue="bulk")

    attributes = telemetry.span("enqueue photo").attributes or {}
    assert attributes["messaging.batch.message_count"] == 3
    assert attributes["messaging.destination.name"] == "bulk"
    assert "messaging.message.id" not in attributes


async def test_a_run_is_a_consumer_span_child_of_its_enqueue(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store, queues={"media": 1})
    runner.handler(photo)(size_of)
    job_id = photo.enqueue(store, Photo(photo_id="p1", size=3))
    assert await runner.run_next() == job_id

    enqueue, run = telemetry.span("enqueue photo"), telemetry.span("run photo")
    assert run.kind is SpanKind.CONSUMER
    assert run.parent is not None
    assert (run.parent.trace_id, run.parent.span_id) == ids_of(enqueue)
    assert [(link.context.trace_id, link.context.span_id) for link in run.links] == [
        ids_of(enqueue)
    ]
    assert dict(run.attributes or {}) == {
        "messaging.system": "jobtable",
        "messaging.operation.name": "run",
        "messaging.operation.type": "process",
        "messaging.destination.name": "media",
        "messaging.message.id": job_id,
        "jobtable.job.kind": "photo",
        "jobtable.job.attempt": 1,
        "jobtable.attempt.outcome": "succeeded",
    }
    assert run.status.status_code is StatusCode.OK


async def test_without_run_parent_a_run_starts_its_own_trace_linked_to_its_enqueue(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    telemetry.instrument(store, run_parent=False)
    runner = jobtable.Runner(store, queues={"media": 1})
    runner.handler(photo)(size_of)
    photo.enqueue(store, Photo(photo_id="p1", size=3))
    await runner.run_next()

    enqueue, run = telemetry.span("enqueue photo"), telemetry.span("run photo")
    assert run.parent is None
    assert ids_of(run)[0] != ids_of(enqueue)[0]
    [link] = run.links
    assert (link.context.trace_id, link.context.span_id) == ids_of(enqueue)


async def test_a_job_enqueued_inside_a_request_span_runs_in_that_requests_trace(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store, queues={"media": 1})
    runner.handler(photo)(size_of)
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("POST /photos") as request:
        photo.enqueue(store, Photo(photo_id="p1", size=3))
    await runner.run_next()

    request_trace = request.get_span_context().trace_id
    enqueue, run = telemetry.span("enqueue photo"), telemetry.span("run photo")
    assert enqueue.parent is not None
    assert enqueue.parent.span_id == request.get_span_context().span_id
    assert ids_of(run)[0] == request_trace


async def test_a_handlers_own_spans_nest_in_its_run_span(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    runner = jobtable.Runner(store)

    @runner.handler(jobtable.Kind("nested", int, int))
    def nested(ctx: jobtable.JobContext[int], payload: int) -> int:
        with tracer.start_as_current_span("resize"):
            return payload

    jobtable.Kind("nested", int, int).enqueue(store, 1)
    await runner.run_next()

    run, resize = telemetry.span("run nested"), telemetry.span("resize")
    assert resize.parent is not None
    assert resize.parent.span_id == ids_of(run)[1]


async def test_a_failure_sets_error_with_its_stored_message(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store)

    async def refuse(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Failure("That size is too large.")

    runner.register("refuse", refuse)
    jobtable.Kind("refuse", int, int).enqueue(store, 1)
    await runner.run_next()

    run = telemetry.span("run refuse")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == "That size is too large."
    assert (run.attributes or {})["error.type"] == "failure"
    assert (run.attributes or {})["jobtable.attempt.outcome"] == "failed"
    assert run.events == ()


async def test_a_retried_attempt_is_an_error_and_the_next_one_continues_the_same_trace(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    flaky = jobtable.Kind(
        "flaky", int, int, max_attempts=2, retry=lambda attempt: datetime.timedelta(0)
    )
    runner = jobtable.Runner(store)
    calls: list[int] = []

    @runner.handler(flaky)
    async def run_flaky(ctx: jobtable.JobContext[int], payload: int) -> int:
        calls.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("boom")
        return payload

    flaky.enqueue(store, 7)
    await runner.run_next()
    await runner.run_next()

    first, second = telemetry.spans("run flaky")
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == jobtable.MESSAGE_INTERNAL
    assert (first.attributes or {})["error.type"] == "internal"
    assert (first.attributes or {})["jobtable.attempt.outcome"] == "retried"
    assert (second.attributes or {})["jobtable.job.attempt"] == 2
    assert second.status.status_code is StatusCode.OK
    assert first.parent == second.parent


async def test_a_timed_out_attempt_is_an_error_saying_so(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store)
    slow = jobtable.Kind("slow", int, int, timeout=0.05)

    @runner.handler(slow)
    async def sleep(ctx: jobtable.JobContext[int], payload: int) -> int:
        await asyncio.sleep(60)
        return payload

    slow.enqueue(store, 1)
    await runner.run_next()

    run = telemetry.span("run slow")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == jobtable.MESSAGE_TIMED_OUT
    assert (run.attributes or {})["error.type"] == "timeout"


async def test_a_job_with_no_handler_fails_its_run_span_with_the_stored_message(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store)
    runner.register("known", size_of)
    jobtable.Kind("unknown", int, int).enqueue(store, 1)
    await runner.run_next()

    run = telemetry.span("run unknown")
    assert run.status.description == "no handler for job kind unknown"
    assert (run.attributes or {})["error.type"] == "no_handler"


async def test_a_handler_raising_after_stop_began_ends_its_span_interrupted(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    runner = jobtable.Runner(store)

    async def quit_early(ctx: jobtable.JobContext[int], payload: int) -> int:
        runner.stop()
        raise RuntimeError("stopping")

    runner.register("quit", quit_early)
    jobtable.Kind("quit", int, int).enqueue(store, 1)
    await runner.run_next()

    run = telemetry.span("run quit")
    assert run.status.status_code is StatusCode.ERROR
    assert run.status.description == jobtable.MESSAGE_INTERRUPTED
    assert (run.attributes or {})["jobtable.attempt.outcome"] == "interrupted"


async def test_a_snoozed_attempt_is_no_error(store: jobtable.Store, telemetry: Telemetry) -> None:
    runner = jobtable.Runner(store)

    async def later(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Retry(after=datetime.timedelta(hours=1))

    runner.register("later", later)
    jobtable.Kind("later", int, int).enqueue(store, 1)
    await runner.run_next()

    run = telemetry.span("run later")
    assert run.status.status_code is StatusCode.UNSET
    assert (run.attributes or {})["jobtable.attempt.outcome"] == "snoozed"


async def test_an_enqueue_that_fails_is_an_error_span_naming_only_the_errors_type(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    with pytest.raises(jobtable.PayloadError):
        photo.enqueue(store, {"photo_id": "p1", "size": "sekrit-size"})  # type: ignore[call-overload]

    span = telemetry.span("enqueue photo")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is None
    assert (span.attributes or {})["error.type"] == "PayloadError"
    assert "sekrit" not in telemetry.text()
    assert telemetry.points("jobtable.jobs.enqueued") == {}


async def test_an_uninstrumented_store_reports_nothing(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    jobtable.otel.uninstrument(store)
    runner = jobtable.Runner(store, queues={"media": 1})
    runner.handler(photo)(size_of)
    photo.enqueue(store, Photo(photo_id="p1", size=3))
    await runner.run_next()

    assert telemetry.spans() == []
    assert telemetry.points("jobtable.jobs.enqueued") == {}


async def test_a_job_with_an_unreadable_traceparent_runs_in_a_trace_of_its_own(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    from jobtable._operations import create_jobs
    from jobtable._values import new_id

    runner = jobtable.Runner(store)
    runner.register("one", size_of)
    job = NewJob(new_id(), '{"photo_id": "p", "size": 1}', store.now(), traceparent="00-junk")
    store.engine.write(create_jobs("one", [job], store.now()))
    assert await runner.run_next() == job.id

    run = telemetry.span("run one")
    assert run.parent is None
    assert run.links == ()
    assert run.status.status_code is StatusCode.OK
