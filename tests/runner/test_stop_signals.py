"""Processes stop when told, whatever their handlers do.

Real worker processes (stop_worker.py) whose ``def`` handler blocks for
ever get SIGTERM, or SIGINT twice, as Kubernetes, systemd and a user at a
terminal send them. One signal must end the process once the grace period
is over: the handler's thread may not hold the interpreter open, and the
job is recorded interrupted. Async handlers that will not stop are in
test_uncooperative_processes.py.
"""

import asyncio
import pathlib
import signal
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable

WORKER = pathlib.Path(__file__).with_name("stop_worker.py")
WaitUntil = Callable[..., Awaitable[None]]

pytestmark = pytest.mark.slow


def never_here(ctx: jobtable.JobContext[str], payload: int) -> str:
    raise AssertionError("the parent process ran a block job")


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


async def exits(process: subprocess.Popen[bytes], limit: float = 60) -> tuple[int, str]:
    """Waits for process to exit; fails the test if it is still alive after limit seconds."""
    try:
        _, err = await asyncio.to_thread(process.communicate, timeout=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the worker did not exit within {limit} s of the signal")
    return process.returncode, err.decode()


async def started_blocked_job(
    store: jobtable.Store, wait_until: WaitUntil
) -> tuple[jobtable.Runner, str]:
    runner = jobtable.Runner(store, name="parent")
    job_id = runner.register("block", never_here).enqueue(0)
    await wait_until(lambda: runner.get(job_id).result == "in handler", limit=60)
    return runner, job_id


async def test_one_sigterm_ends_a_worker_whose_def_handler_blocks_for_ever(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    runner, job_id = await started_blocked_job(store, wait_until)
    worker.send_signal(signal.SIGTERM)
    code, err = await exits(worker)
    assert code == 0, err
    assert "run returned" in err
    # The end of the grace period recorded the job interrupted.
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)


async def test_a_second_sigint_ends_the_worker_without_a_threading_traceback(
    store: jobtable.Store, worker: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    runner, job_id = await started_blocked_job(store, wait_until)
    worker.send_signal(signal.SIGINT)
    worker.send_signal(signal.SIGINT)
    code, err = await exits(worker)
    assert code == 0, err
    assert "Exception ignored" not in err
    assert "Traceback" not in err
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)


async def test_a_def_handler_publishing_after_its_runner_gave_up_on_it_gets_not_running(
    store: jobtable.Store,
) -> None:
    """A slow handler outlives the grace period; its late publishes are fenced off."""
    inside = threading.Event()
    go_on = threading.Event()
    late: list[BaseException] = []
    returned = threading.Event()

    def slow(ctx: jobtable.JobContext[int], payload: int) -> int:
        ctx.publish(1)
        inside.set()
        go_on.wait(60)
        try:
            ctx.publish(2)
        except BaseException as err:
            late.append(err)
        returned.set()
        return 3

    runner = jobtable.Runner(store, workers=1, grace_period=0.1, poll_interval=0.05)
    job_id = runner.register("slow", slow).enqueue(0)
    await runner.start()
    assert await asyncio.to_thread(inside.wait, 60)
    runner.stop()
    await runner.wait()
    go_on.set()
    assert await asyncio.to_thread(returned.wait, 60)
    assert [type(e) for e in late] == [jobtable.NotRunning]
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.FAILED, 1)
    assert job.error == jobtable.MESSAGE_INTERRUPTED


async def test_start_after_a_stop_before_any_start_raises_runner_error(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    runner.register("block", never_here)
    runner.stop()
    with pytest.raises(jobtable.RunnerError, match="the runner was stopped"):
        await runner.start()


def test_run_after_a_stop_before_any_start_raises_runner_error(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    runner.register("block", never_here)
    runner.stop()
    with pytest.raises(jobtable.RunnerError, match="the runner was stopped"):
        runner.run()


async def test_start_after_a_stop_raises_that_the_runner_was_stopped(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    runner.register("block", never_here)
    await runner.start()
    runner.stop()
    await runner.wait()
    with pytest.raises(jobtable.RunnerError, match="the runner was stopped"):
        await runner.start()
