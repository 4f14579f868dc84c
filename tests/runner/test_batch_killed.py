"""A worker SIGKILLed in the middle of a batch call: every job of the batch runs again.

The worker is ``batch_worker.py`` beside this file, a real ``Runner.run()``
in a process of its own, killed while its batch handler holds five jobs.
This process's runner of the same name interrupts the killed runner's jobs
at its start; each goes back to its queue (attempts remain) and runs again.
"""

import asyncio
import collections
import datetime
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence

import pytest
from started import run_until

import jobtable

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

WORKER = pathlib.Path(__file__).with_name("batch_worker.py")


def batch_kind() -> jobtable.BatchKind[int, int]:
    """The worker's kind, declared alike here (the worker file is not importable)."""
    return jobtable.BatchKind(
        "killed-batch",
        int,
        int,
        batch=jobtable.Batch(size=5, max_wait=datetime.timedelta(hours=1)),
        max_attempts=2,
    )


def runs(marker: pathlib.Path) -> collections.Counter[tuple[str, str]]:
    """How many calls each job was in, by job and attempt."""
    if not marker.exists():
        return collections.Counter()
    lines = marker.read_text(encoding="utf-8").splitlines()
    return collections.Counter((line.split()[0], line.split()[1]) for line in lines)


def spawn(store_target: str, marker: pathlib.Path) -> subprocess.Popen[bytes]:
    """Starts the worker process, named batcher, over the test's store."""
    args = [sys.executable, str(WORKER), store_target, "batcher", str(marker)]
    return subprocess.Popen(args, start_new_session=True)


async def test_every_job_of_a_batch_killed_mid_call_runs_again_and_none_is_lost(
    store: jobtable.Store,
    store_target: str,
    tmp_path: pathlib.Path,
    wait_until: WaitUntil,
    finished: Finished,
) -> None:
    kind = batch_kind()
    marker = tmp_path / "runs.txt"
    ids = kind.enqueue_many(store, range(5))
    worker = spawn(store_target, marker)
    try:
        await wait_until(lambda: len(runs(marker)) == 5, limit=60)
        worker.kill()
        assert await asyncio.to_thread(worker.wait, 60) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert runs(marker) == collections.Counter({(i, "1"): 1 for i in ids})

    calls: list[list[str]] = []
    runner = jobtable.Runner(store, name="batcher", workers=5, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append([job.ctx.id for job in jobs])
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    assert sorted(i for call in calls for i in call) == sorted(ids)
    for n, job_id in enumerate(ids):
        record = store.inspect(job_id)
        assert (record.status, record.attempt) == ("succeeded", 2)
        assert kind.get(store, job_id).result == 2 * n
