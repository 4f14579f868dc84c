"""A worker SIGKILLed while its jobs sleep and wait: a new runner resumes them, steps skipped.

The worker is ``durable_worker.py`` beside this file, a real ``Runner.run()``
in a process of its own. A sleeping or waiting job is back in the table, so
the kill takes nothing from it: another runner (a restart) resumes the
sleeper at its time and the waiter at its signal, and neither runs its
completed step again.
"""

import asyncio
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable

import durable_worker
import pytest

import jobtable

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

WORKER = pathlib.Path(__file__).with_name("durable_worker.py")


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def spawn(store_target: str, marker: pathlib.Path) -> subprocess.Popen[bytes]:
    """Starts the worker process, named durable, over the test's store."""
    args = [sys.executable, str(WORKER), store_target, "durable", str(marker)]
    return subprocess.Popen(args, start_new_session=True)


def suspended(store: jobtable.Store, job_id: str) -> bool:
    """Whether the job gave its worker back: queued again after a claim (one read)."""
    record = store.inspect(job_id)
    return record.status is jobtable.Status.QUEUED and record.attempt > 0


async def test_sleeping_and_waiting_jobs_survive_a_sigkill_and_resume_after_a_restart(
    store: jobtable.Store,
    store_target: str,
    tmp_path: pathlib.Path,
    wait_until: WaitUntil,
    finished: Finished,
) -> None:
    marker = tmp_path / "runs.txt"
    sleeper = durable_worker.NAP.enqueue(store, 2.0)
    waiter = durable_worker.HOLD.enqueue(store, "order-9")
    worker = spawn(store_target, marker)
    try:
        await wait_until(lambda: suspended(store, sleeper) and suspended(store, waiter), limit=60)
        worker.kill()
        assert await asyncio.to_thread(worker.wait, 60) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert sorted(lines(marker)) == sorted([f"before {sleeper}", f"before {waiter}"])

    runner = jobtable.Runner(store, name="durable", workers=2, poll_interval=0.05)
    durable_worker.handlers(runner, str(marker))
    await runner.start()
    try:
        await wait_until(finished(runner, [sleeper]), limit=60)
        assert store.get(waiter).status is jobtable.Status.QUEUED, "waits for its signal"
        store.signal(durable_worker.GO, "order-9", durable_worker.Go(word="go"))
        await wait_until(finished(runner, [waiter]), limit=60)
    finally:
        runner.stop()
        await runner.wait()
    assert durable_worker.NAP.get(store, sleeper).result == "rested"
    assert durable_worker.HOLD.get(store, waiter).result == "go"
    assert sorted(lines(marker)) == sorted(
        [f"before {sleeper}", f"before {waiter}", f"after {sleeper}", f"after {waiter}"]
    )
