"""A handler for runners a test starts for what they do besides running jobs.

A runner with no handler refuses to start (it would fail every job it
claims), so a test about its start, stop, heartbeat or recovery attaches
this one, which no job of the test ever reaches.
"""

import jobtable


async def _unused(ctx: jobtable.JobContext[int], payload: int) -> int:
    raise AssertionError("a job of the test reached the placeholder handler")


def handled(runner: jobtable.Runner) -> jobtable.Runner:
    """Returns runner with a handler attached for kind ``placeholder`` in its first queue."""
    queue = next(iter(runner.queues))
    runner.handler(jobtable.Kind("placeholder", int, int, queue=queue))(_unused)
    return runner
