"""A trace that crosses a process boundary: enqueued here, run by a worker process.

The worker is ``otel_worker.py`` beside this file. The job carries its
enqueue's trace context in the table, so the worker's run span is a child of
the enqueue span made in this process, on either engine.
"""

import asyncio
import json
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable
from otel.conftest import Telemetry

pytestmark = pytest.mark.slow

WORKER = pathlib.Path(__file__).with_name("otel_worker.py")


@pytest.fixture
def spans(tmp_path: pathlib.Path) -> pathlib.Path:
    """Where the worker writes its spans when it stops."""
    return tmp_path / "worker-spans.json"


@pytest.fixture
def worker(store_target: str, spans: pathlib.Path) -> Iterator[subprocess.Popen[bytes]]:
    """An instrumented worker process over the test's store; killed at the end if still there."""
    process = subprocess.Popen(
        [sys.executable, str(WORKER), store_target, str(spans)], start_new_session=True
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


async def test_a_job_enqueued_here_runs_in_a_worker_process_within_the_same_trace(
    store: jobtable.Store,
    telemetry: Telemetry,
    worker: subprocess.Popen[bytes],
    spans: pathlib.Path,
    wait_until: Callable[..., Awaitable[None]],
) -> None:
    resize = jobtable.Kind("resize", int, int)
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("POST /resize"):
        job_id = resize.enqueue(store, 21)
    await wait_until(lambda: store.get(job_id).status == jobtable.Status.SUCCEEDED, limit=60)
    worker.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(worker.wait, 60) == 0

    enqueue = telemetry.span("enqueue resize")
    assert enqueue.context is not None
    [run] = json.loads(await asyncio.to_thread(spans.read_text, encoding="utf-8"))
    assert run["name"] == "run resize"
    assert run["kind"] == "CONSUMER"
    assert run["trace_id"] == enqueue.context.trace_id
    assert run["parent_span_id"] == enqueue.context.span_id
    assert run["status"] == "OK"
    assert store.get(job_id).result == 42
