"""A worker SIGKILLed during a step, and right after it recorded one: what the retry runs.

The worker is ``step_worker.py`` beside this file, a real ``Runner.run()``
in a process of its own. Killed inside a step, it recorded nothing, so the
retry runs the step again; killed after the step was recorded, the retry
gets the recorded output and the step does not run again. The retry is
run by this process's runner of the same name, whose start interrupts the
killed runner's jobs (they go back to their queue: attempts remain).
"""

import asyncio
import collections
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable

import pytest

import jobtable

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

WORKER = pathlib.Path(__file__).with_name("step_worker.py")
STEPPED = jobtable.Kind("stepped", int, str, max_attempts=2)


def runs(marker: pathlib.Path) -> collections.Counter[tuple[str, str]]:
    """How many times each job's step started, by job and attempt."""
    if not marker.exists():
        return collections.Counter()
    lines = marker.read_text(encoding="utf-8").splitlines()
    return collections.Counter((line.split()[0], line.split()[1]) for line in lines)


def spawn(store_target: str, marker: pathlib.Path) -> subprocess.Popen[bytes]:
    """Starts the worker process, named stepper, over the test's store."""
    args = [sys.executable, str(WORKER), store_target, "stepper", str(marker)]
    return subprocess.Popen(args, start_new_session=True)


async def test_a_step_killed_before_it_records_runs_again_and_one_recorded_does_not(
    store: jobtable.Store,
    store_target: str,
    tmp_path: pathlib.Path,
    wait_until: WaitUntil,
    finished: Finished,
) -> None:
    marker = tmp_path / "runs.txt"
    inside, recorded = STEPPED.enqueue_many(store, [0, 1])
    worker = spawn(store_target, marker)
    try:
        await wait_until(
            lambda: (inside, "1") in runs(marker) and bool(STEPPED.get(store, recorded).result),
            limit=60,
        )
        assert STEPPED.get(store, recorded).result == "recorded"
        worker.kill()
        assert await asyncio.to_thread(worker.wait, 60) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert [s.name for s in store.inspect(inside).steps] == []
    assert [(s.name, s.attempt) for s in store.inspect(recorded).steps] == [("fetch", 1)]

    runner = jobtable.Runner(store, name="stepper", workers=2, poll_interval=0.05)

    @runner.handler(STEPPED)
    async def stepped(ctx: jobtable.JobContext[str], payload: int) -> str:
        def fetch(n: int) -> int:
            with marker.open("a", encoding="utf-8") as file:
                file.write(f"{ctx.id} {ctx.attempt}\n")
            return n * 10

        return str(await ctx.step("fetch", fetch, payload))

    await runner.start()
    try:
        await wait_until(finished(runner, [inside, recorded]), limit=60)
    finally:
        runner.stop()
        await runner.wait()
    assert runs(marker) == collections.Counter(
        {(inside, "1"): 1, (inside, "2"): 1, (recorded, "1"): 1}
    )
    assert [(j.status, j.result) for j in map(store.get, [inside, recorded])] == [
        (jobtable.Status.SUCCEEDED, "0"),
        (jobtable.Status.SUCCEEDED, "10"),
    ]
    assert [(s.name, s.attempt) for s in store.inspect(inside).steps] == [("fetch", 2)]
