"""A started runner for a test: runs until the jobs it names finished, then stops."""

from collections.abc import Awaitable, Callable

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


async def run_until(
    runner: jobtable.Runner, ids: list[str], wait_until: WaitUntil, finished: Finished
) -> None:
    """Starts runner, waits until every job of ids finished, then stops it."""
    await runner.start()
    try:
        await wait_until(finished(runner, ids), limit=60)
    finally:
        runner.stop()
        await runner.wait()
