"""A Django task's enqueue goes the way of every enqueue: traced, its run a child of its enqueue."""

from __future__ import annotations

from collections.abc import Callable

import djtasks
import pytest
from django.db import transaction
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import jobtable
import jobtable.otel
from jobtable.contrib.django import KIND_NAME, JobtableBackend

Wait = Callable[..., None]


def span(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    """The one finished span called name."""
    [found] = [s for s in exporter.get_finished_spans() if s.name == name]
    return found


@pytest.fixture
def exporter(store: jobtable.Store) -> InMemorySpanExporter:
    """The spans of the backend's store, kept in memory."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    jobtable.otel.instrument(store, tracer_provider=provider)
    return spans


def assert_run_is_child_of_enqueue(exporter: InMemorySpanExporter) -> None:
    enqueue, run = span(exporter, f"enqueue {KIND_NAME}"), span(exporter, f"run {KIND_NAME}")
    assert run.parent is not None
    assert enqueue.context is not None
    assert (run.parent.trace_id, run.parent.span_id) == (
        enqueue.context.trace_id,
        enqueue.context.span_id,
    )


def test_a_django_task_run_span_is_the_child_of_its_enqueue_span(
    exporter: InMemorySpanExporter, backend: JobtableBackend, Worker: type, wait_finished: Wait
) -> None:
    result = djtasks.noop_task.enqueue()
    with Worker(backend, {"default": 1}):
        wait_finished(result)
    assert_run_is_child_of_enqueue(exporter)


def test_a_django_task_enqueued_at_commit_is_traced_when_it_is_stored(
    exporter: InMemorySpanExporter,
    backend: JobtableBackend,
    django_db: str,
    Worker: type,
    wait_finished: Wait,
) -> None:
    with transaction.atomic(using=django_db):
        result = djtasks.noop_task.enqueue()
        assert exporter.get_finished_spans() == ()
    with Worker(backend, {"default": 1}):
        wait_finished(result)
    assert_run_is_child_of_enqueue(exporter)


async def test_an_async_django_enqueue_is_traced(
    exporter: InMemorySpanExporter, backend: JobtableBackend, Worker: type, wait_finished: Wait
) -> None:
    await djtasks.noop_task.aenqueue()
    assert span(exporter, f"enqueue {KIND_NAME}") is not None
