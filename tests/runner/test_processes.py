"""Worker processes: a real ``Runner.run()`` stopped by a signal, and one killed mid-job.

The worker is ``worker_process.py`` beside this file. A killed worker's
running jobs are failed as interrupted by the next runner of its name, or by
any live runner once its lease expires, and every job still queued then runs
exactly once.
"""

import asyncio
import collections
import logging
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable
from jobtable._runner.maintenance import RESTARTED

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

WORKER = pathlib.Path(__file__).with_name("worker_process.py")


# The test's own handlers, of the worker's kinds and types.


async def hold(ctx: jobtable.JobContext[str], payload: int) -> str:
    raise AssertionError("a job left running by a killed worker must not run again")


def mark_into(marker: pathlib.Path) -> Callable[[jobtable.JobContext[int], int], int]:
    def mark(ctx: jobtable.JobContext[int], payload: int) -> int:
        with marker.open("a", encoding="utf-8") as file:
            file.write(ctx.id + "\n")
        return payload

    return mark


@pytest.fixture
def marker(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "runs.txt"


@pytest.fixture
def spawn(
    store_target: str, marker: pathlib.Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Starts worker processes over the test's store; kills any left at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, *, workers: int = 2, lease: float = 30.0) -> subprocess.Popen[bytes]:
        args = [sys.executable, str(WORKER), store_target, name, str(workers), str(lease)]
        process = subprocess.Popen([*args, str(marker)], start_new_session=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


async def exit_code(process: subprocess.Popen[bytes], limit: float = 60) -> int:
    try:
        return await asyncio.to_thread(process.wait, limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the worker process did not exit within {limit} s")


def runs(marker: pathlib.Path) -> collections.Counter[str]:
    if not marker.exists():
        return collections.Counter()
    return collections.Counter(marker.read_text(encoding="utf-8").split())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_run_stops_gracefully_on_a_signal_and_records_the_running_job(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    wait_until: WaitUntil,
    signum: signal.Signals,
) -> None:
    enqueuer = jobtable.Runner(store, name="web")
    holds = enqueuer.register("hold", hold)
    job_id = holds.enqueue(0)
    worker = spawn("worker-1")
    await wait_until(lambda: holds.get(job_id).result == "in handler", limit=60)
    worker.send_signal(signum)
    assert await exit_code(worker) == 0
    job = holds.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "stopped gracefully")


async def test_a_worker_killed_mid_job_has_its_running_jobs_failed_by_the_next_start_of_its_name(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    marker: pathlib.Path,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, name="worker-1", workers=4, poll_interval=0.05)
    holds = runner.register("hold", hold)
    marks = runner.register("mark", mark_into(marker))
    # Oldest first: the worker's two workers take the two holds, and the marks
    # stay queued behind them.
    held = holds.enqueue_many([1, 2])
    queued = marks.enqueue_many(range(10))
    worker = spawn("worker-1", workers=2)
    await wait_until(lambda: all(holds.get(i).result == "in handler" for i in held), limit=60)
    worker.kill()
    assert await exit_code(worker) == -signal.SIGKILL
    assert {runner.get(i).status for i in held} == {jobtable.Status.RUNNING}

    await runner.start()
    try:
        await wait_until(finished(runner, held + queued))
    finally:
        runner.stop()
        await runner.wait()
    for job_id in held:
        job = runner.get(job_id)
        assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    counts = [r.__dict__["count"] for r in caplog.records if r.msg == RESTARTED]
    assert counts == [2]
    assert {runner.get(i).status for i in queued} == {jobtable.Status.SUCCEEDED}
    assert runs(marker) == collections.Counter({job_id: 1 for job_id in queued})


async def test_a_worker_killed_mid_job_has_its_running_jobs_failed_by_a_live_runner_after_its_lease(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    marker: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    survivor = jobtable.Runner(store, name="survivor", workers=1, lease=0.5)
    holds = survivor.register("hold", hold)
    # The survivor runs before the work is enqueued, and is kept busy so the
    # killed worker takes the hold job.
    release = asyncio.Event()

    async def block(ctx: jobtable.JobContext[int], payload: int) -> int:
        await release.wait()
        return payload

    blocker = survivor.register("block", block)
    blocker.enqueue(0)
    await survivor.start()
    try:
        held = holds.enqueue(1)
        worker = spawn("worker-1", workers=1, lease=0.5)
        await wait_until(lambda: holds.get(held).result == "in handler", limit=60)
        worker.kill()
        await exit_code(worker)
        await wait_until(lambda: holds.get(held).status is jobtable.Status.FAILED)
    finally:
        release.set()
        survivor.stop()
        await survivor.wait()
    assert holds.get(held).error == jobtable.MESSAGE_INTERRUPTED
