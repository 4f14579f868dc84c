"""A workflow job's run span links to its dependencies' run spans, on both engines.

The store keeps the trace context of the run span of the attempt that
ended each job (``run_trace``), with its outcome; a dependent's run span
links to each of its dependencies', the link naming the dependency's id.
An uninstrumented store stores none and reads none: no query more.
"""

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import jobtable
import jobtable.otel
from jobtable._engines.postgres.workflow_queries import PostgresWorkflowQueries
from jobtable._engines.sqlite.workflow_queries import SQLiteWorkflowQueries
from jobtable.testing import drain
from otel.conftest import Telemetry, ids_of

step = jobtable.Kind("link-step", int, int)
flaky = jobtable.Kind("link-flaky", int, int, max_attempts=2)
DEPENDENCY_ID = "jobtable.dependency.id"


async def echo(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


async def fails_once(ctx: jobtable.JobContext[int], payload: int) -> int:
    if ctx.attempt == 1:
        raise RuntimeError("first attempt")
    return payload


def runner_of(store: jobtable.Store) -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=1)
    runner.handler(step)(echo)
    runner.handler(flaky)(fails_once)
    return runner


async def run_all(store: jobtable.Store) -> None:
    """Runs every job, a retry without waiting for its backoff."""
    await drain(runner_of(store))


def run_of(telemetry: Telemetry, job_id: str) -> list[ReadableSpan]:
    """The run spans of job_id, one an attempt, in the order they ended."""
    return [
        s
        for s in telemetry.spans()
        if s.name.startswith("run ") and (s.attributes or {})["messaging.message.id"] == job_id
    ]


def dependency_links(span: ReadableSpan) -> dict[str, tuple[int, int]]:
    """span's links to dependencies' runs: the dependency's id to the linked trace and span."""
    return {
        str((link.attributes or {})[DEPENDENCY_ID]): (link.context.trace_id, link.context.span_id)
        for link in span.links
        if DEPENDENCY_ID in (link.attributes or {})
    }


async def test_a_chain_links_each_run_to_the_run_of_the_job_before(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    wf = jobtable.Workflow("chain")
    a = wf.add(step, 1)
    b = wf.add(step, a)
    c = wf.add(step, 3, after=[b])
    await wf.aenqueue(store)
    await run_all(store)

    [run_a], [run_b], [run_c] = (run_of(telemetry, n.id) for n in (a, b, c))
    assert dependency_links(run_a) == {}
    assert dependency_links(run_b) == {a.id: ids_of(run_a)}
    assert dependency_links(run_c) == {b.id: ids_of(run_b)}


async def test_a_fan_in_links_to_the_run_of_every_dependency(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    wf = jobtable.Workflow("fan-in")
    left, right = wf.add(step, 1), wf.add(step, 2)
    opted = wf.add(flaky, 3, max_attempts=1)
    gather = wf.add(step, 4, after=[left, right, jobtable.After(opted, on_failure="run")])
    await wf.aenqueue(store)
    await run_all(store)

    [run_left], [run_right], [run_opted] = (run_of(telemetry, n.id) for n in (left, right, opted))
    [run_gather] = run_of(telemetry, gather.id)
    # A failed dependency's run counts as well: the dependent ran after it.
    assert dependency_links(run_gather) == {
        left.id: ids_of(run_left),
        right.id: ids_of(run_right),
        opted.id: ids_of(run_opted),
    }


async def test_a_retried_dependency_links_to_the_run_of_its_last_attempt(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    wf = jobtable.Workflow("retried")
    first = wf.add(flaky, 1)
    then = wf.add(step, first)
    await wf.aenqueue(store)
    await run_all(store)

    failed, succeeded = run_of(telemetry, first.id)
    [run_then] = run_of(telemetry, then.id)
    assert dependency_links(run_then) == {first.id: ids_of(succeeded)}
    assert ids_of(failed) != ids_of(succeeded)


async def test_a_link_names_the_dependency_by_id_only(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    wf = jobtable.Workflow("payloads")
    first = wf.add(step, 424242)
    then = wf.add(step, first)
    await wf.aenqueue(store)
    await run_all(store)

    [run_then] = run_of(telemetry, then.id)
    [link] = [link for link in run_then.links if DEPENDENCY_ID in (link.attributes or {})]
    assert dict(link.attributes or {}) == {DEPENDENCY_ID: first.id}


@pytest.fixture
def trace_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The jobs whose dependencies' run traces were read, on either engine, as the test ran."""
    reads: list[str] = []
    for adapter in (SQLiteWorkflowQueries, PostgresWorkflowQueries):
        monkeypatch.setattr(adapter, "dependency_traces", counting(adapter, reads))
    return reads


def counting(adapter: type[Any], reads: list[str]) -> Callable[..., list[tuple[str, str]]]:
    """adapter's dependency_traces, noting in reads each job it reads for."""
    original: Callable[..., list[tuple[str, str]]] = adapter.dependency_traces

    def counted(self: object, *, job: str) -> list[tuple[str, str]]:
        reads.append(job)
        return original(self, job=job)

    return counted


async def test_an_instrumented_store_reads_each_dependents_links_once_and_stores_its_runs(
    store: jobtable.Store, telemetry: Telemetry, trace_reads: list[str]
) -> None:
    wf = jobtable.Workflow("stored")
    first = wf.add(step, 1)
    then = wf.add(step, first)
    await wf.aenqueue(store)
    await run_all(store)

    assert trace_reads == [first.id, then.id]
    [run_first] = run_of(telemetry, first.id)
    stored = store.engine.read(lambda q: q.dependency_traces(job=then.id))
    ran = run_first.get_span_context()
    assert ran is not None
    expected = f"00-{ran.trace_id:032x}-{ran.span_id:016x}-{ran.trace_flags:02x}"
    assert stored == [(first.id, expected)]


async def test_an_uninstrumented_store_stores_no_run_and_reads_none(
    store: jobtable.Store, trace_reads: list[str]
) -> None:
    wf = jobtable.Workflow("plain")
    first = wf.add(step, 1)
    then = wf.add(step, first)
    await wf.aenqueue(store)
    await run_all(store)

    assert trace_reads == []
    assert store.engine.read(lambda q: q.dependency_traces(job=then.id)) == []
    assert store.get(then.id).result == 1


async def test_a_plain_job_on_an_instrumented_store_reads_no_links(
    store: jobtable.Store, telemetry: Telemetry, trace_reads: list[str]
) -> None:
    step.enqueue(store, 1)
    await run_all(store)

    assert trace_reads == []
    [run] = telemetry.spans("run link-step")
    assert dependency_links(run) == {}
