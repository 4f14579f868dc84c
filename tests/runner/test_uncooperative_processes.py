"""A worker process stops when told, even when an async handler will not.

Real worker processes (uncooperative_worker.py: grace period 1 s, cancel
grace 1 s) get SIGTERM while an async handler swallows every cancel, or
blocks the event loop in ``time.sleep``. The process must end within the
bound ``Runner.run`` promises, grace_period + cancel_grace + 5 s (the tests
allow far longer: the machine is shared), with the job recorded interrupted.
"""

import asyncio
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable

WORKER = pathlib.Path(__file__).with_name("uncooperative_worker.py")
WaitUntil = Callable[..., Awaitable[None]]

pytestmark = pytest.mark.slow

swallow = jobtable.Kind("swallow", int, str)
block = jobtable.Kind("block", int, str)
quick = jobtable.Kind("quick", int, int)


@pytest.fixture
def worker(store_target: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, str(WORKER), store_target],
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()
    assert process.stderr is not None
    process.stderr.close()


async def exits(process: subprocess.Popen[bytes], limit: float = 90) -> tuple[int, str]:
    """Waits for process to exit; fails the test if it is still alive after limit seconds."""
    try:
        _, err = await asyncio.to_thread(process.communicate, timeout=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the worker did not exit within {limit} s of the signal")
    return process.returncode, err.decode()


async def in_handler(store: jobtable.Store, job_id: str, wait_until: WaitUntil) -> None:
    await wait_until(lambda: store.get(job_id).result == "in handler", limit=60)


async def test_sigterm_ends_a_worker_whose_async_handler_swallows_cancellation(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    job_id = swallow.enqueue(store, 0)
    await in_handler(store, job_id, wait_until)
    worker.send_signal(signal.SIGTERM)
    code, err = await exits(worker)
    assert code == 0, err
    assert "run returned" in err
    job = store.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    assert "did not end within 1.0 s of the end of the grace period" in err
    assert f"[job_id={job_id} kind=swallow]" in err


async def test_sigterm_ends_a_worker_whose_async_handler_blocks_the_event_loop(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    job_id = block.enqueue(store, 0)
    await in_handler(store, job_id, wait_until)
    worker.send_signal(signal.SIGTERM)
    code, err = await exits(worker)
    # The loop never ran again: the watchdog ended the process.
    assert code == 1, err
    assert "run returned" not in err
    job = store.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    would_not_stop = [line for line in err.splitlines() if "would not stop" in line]
    assert would_not_stop, err
    assert all(f"[job_id={job_id} kind=block]" in line for line in would_not_stop)


async def test_a_worker_names_the_async_handler_that_blocks_its_event_loop(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    job_id = block.enqueue(store, 0)
    await in_handler(store, job_id, wait_until)
    worker.send_signal(signal.SIGTERM)
    _, err = await exits(worker)
    [warning] = [line for line in err.splitlines() if "blocked the event loop" in line]
    assert warning.startswith("WARNING ")
    assert warning.endswith(f"[job_id={job_id} kind=block]")


async def test_a_second_sigterm_ends_a_worker_whose_async_handler_swallows_cancellation(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    job_id = swallow.enqueue(store, 0)
    await in_handler(store, job_id, wait_until)
    worker.send_signal(signal.SIGTERM)
    worker.send_signal(signal.SIGTERM)
    code, err = await exits(worker)
    assert code == 0, err
    job = store.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)


async def test_a_cancel_ends_a_job_whose_handler_swallows_it_and_the_slot_runs_the_next_job(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    stuck_id = swallow.enqueue(store, 0)
    await in_handler(store, stuck_id, wait_until)
    next_id = quick.enqueue(store, 21)
    assert store.cancel(stuck_id) is jobtable.CancelResult.REQUESTED
    # The worker has one slot: the next job runs once the stuck one is released.
    await wait_until(lambda: store.get(next_id).status is jobtable.Status.SUCCEEDED, limit=60)
    assert store.get(stuck_id).status is jobtable.Status.CANCELLED
    assert store.get(next_id).result == 42
    worker.send_signal(signal.SIGTERM)
    code, err = await exits(worker)
    assert code == 0, err
    assert "did not end within 1.0 s of its cancel" in err
