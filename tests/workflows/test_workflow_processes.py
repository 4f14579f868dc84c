"""A worker SIGKILLed right after a dependency succeeded: its dependent still runs.

The dependent's readiness is decided in the transaction that records the
dependency's success, so no crash can leave it between the two: the first
worker, which claims the dependency's kind only, is killed as soon as the
store shows the dependency succeeded; the dependent is queued already, and
a worker started afterwards runs it with the result as its payload.
"""

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable

pytestmark = pytest.mark.slow

WORKER = pathlib.Path(__file__).with_name("workflow_worker.py")
first = jobtable.Kind("first", int, int)
second = jobtable.Kind("second", int, int, max_attempts=3)
WaitUntil = Callable[..., Awaitable[None]]


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


@pytest.fixture
def spawn(store_target: str) -> Iterator[Callable[[str, str], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, mode: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, str(WORKER), store_target, name, mode], start_new_session=True
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_a_dependent_runs_after_its_worker_was_killed_once_the_dependency_succeeded(
    store: jobtable.Store,
    spawn: Callable[[str, str], subprocess.Popen[bytes]],
    wait_until: WaitUntil,
) -> None:
    wf = jobtable.Workflow("crash")
    a = wf.add(first, 21)
    b = wf.add(second, a)
    wf.enqueue(store)
    worker = spawn("w1", "first")
    await wait_until(lambda: store.get(a.id).status is jobtable.Status.SUCCEEDED, limit=60)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    assert store.get(b.id).status is jobtable.Status.QUEUED
    spawn("w2", "both")
    await wait_until(lambda: store.get(b.id).status is jobtable.Status.SUCCEEDED, limit=60)
    assert second.get(store, b.id).result == 43
