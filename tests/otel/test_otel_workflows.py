"""The spans of a workflow's jobs, on both engines: grouped by the workflow's id and name.

One ``wf.enqueue`` is one ``enqueue <workflow name>`` span, the parent of
every job's run span; each carries the workflow's id, which a job a handler
added to its workflow (stored with no enqueue span) carries too.
"""

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import jobtable
from otel.conftest import Telemetry, ids_of

step = jobtable.Kind("wf-step", int, int, queue="media")
spread = jobtable.Kind("wf-spread", int, int, queue="media")

pytestmark = pytest.mark.usefixtures("telemetry")


async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload * 2


async def spread_out(ctx: jobtable.JobContext[int], payload: int) -> int:
    ctx.workflow.add(step, ctx.workflow.current)
    return payload


def runner_of(store: jobtable.Store) -> jobtable.Runner:
    runner = jobtable.Runner(store, queues={"media": 1})
    runner.handler(step)(double)
    runner.handler(spread)(spread_out)
    return runner


def parent_of(span: ReadableSpan) -> tuple[int, int] | None:
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


async def test_a_workflows_enqueue_is_one_span_naming_the_workflow_and_parent_of_every_run(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    wf = jobtable.Workflow("nightly")
    first = wf.add(step, 1)
    wf.add(step, first)
    wf.add(step, 5, after=[first])
    workflow_id = wf.enqueue(store)
    runner = runner_of(store)
    while await runner.run_next() is not None:
        pass

    enqueue = telemetry.span("enqueue nightly")
    attributes = enqueue.attributes or {}
    assert attributes["jobtable.workflow.id"] == workflow_id
    assert attributes["jobtable.workflow.name"] == "nightly"
    assert attributes["messaging.batch.message_count"] == 3
    runs = telemetry.spans("run wf-step")
    assert len(runs) == 3
    for run in runs:
        assert (run.attributes or {})["jobtable.workflow.id"] == workflow_id
        assert parent_of(run) == ids_of(enqueue)


async def test_a_job_a_handler_adds_carries_its_workflows_id(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    wf = jobtable.Workflow("fan")
    wf.add(spread, 4)
    workflow_id = await wf.aenqueue(store)
    runner = runner_of(store)
    while await runner.run_next() is not None:
        pass

    [added] = telemetry.spans("run wf-step")
    assert (added.attributes or {})["jobtable.workflow.id"] == workflow_id
    assert (telemetry.span("run wf-spread").attributes or {})["jobtable.workflow.id"] == (
        workflow_id
    )


async def test_a_plain_jobs_spans_name_no_workflow(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    step.enqueue(store, 1)
    await runner_of(store).run_next()

    for span in telemetry.spans():
        assert not any(name.startswith("jobtable.workflow.") for name in span.attributes or {})
    [link] = telemetry.span("run wf-step").links
    enqueue = telemetry.span("enqueue wf-step")
    assert (link.context.trace_id, link.context.span_id) == ids_of(enqueue)
