"""The spans of a workflow's jobs, on both engines: grouped by the workflow's id and name.

One ``wf.enqueue`` is one ``enqueue <workflow name>`` span, the parent of
every job's run span; each carries the workflow's id. A job a handler adds
to its workflow (stored with no enqueue span) runs as a child of the adding
job's run span, and carries the workflow's id too.
"""

from typing import Any

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


def spread_out_in_a_thread(ctx: jobtable.JobContext[int], payload: int) -> int:
    ctx.workflow.add(step, ctx.workflow.current)
    return payload


def runner_of(store: jobtable.Store, spreader: Any = spread_out) -> jobtable.Runner:
    runner = jobtable.Runner(store, queues={"media": 1})
    runner.handler(step)(double)
    runner.handler(spread)(spreader)
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


@pytest.mark.parametrize("spreader", [spread_out, spread_out_in_a_thread], ids=["async", "sync"])
async def test_a_job_a_handler_adds_runs_as_a_child_of_the_adding_run_in_its_workflow(
    store: jobtable.Store, telemetry: Telemetry, spreader: Any
) -> None:
    wf = jobtable.Workflow("fan")
    wf.add(spread, 4)
    workflow_id = await wf.aenqueue(store)
    runner = runner_of(store, spreader)
    while await runner.run_next() is not None:
        pass

    [added], adding = telemetry.spans("run wf-step"), telemetry.span("run wf-spread")
    assert (added.attributes or {})["jobtable.workflow.id"] == workflow_id
    assert (adding.attributes or {})["jobtable.workflow.id"] == workflow_id
    assert parent_of(added) == ids_of(adding)


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
