"""A runner under flow control, in this process: a slot its own job frees is claimed at once.

A limited claim can come back short because the runner's own jobs hold the
queue's slots. When one of them ends, nothing from the database wakes the
runner on PostgreSQL (an outcome sends no notice), so the runner itself
must look again: these tests give it a poll interval far longer than the
test may take, so a runner that waited for its poll would time out.
"""

import datetime
from collections.abc import Awaitable, Callable

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
NEVER = 3600.0
"""A poll interval no test waits for."""
STEP = jobtable.Kind("step", int, int, queue="q")


async def run_all(
    store: jobtable.Store, ids: list[str], limit: jobtable.Queue, wait_until: WaitUntil
) -> None:
    """Runs a 4-worker runner under limit, which never polls, until every job of ids succeeded."""
    runner = jobtable.Runner(store, queues={"q": 4}, poll_interval=NEVER, flow=[limit])

    @runner.handler(STEP)
    def step(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    await runner.start()
    try:
        await wait_until(
            lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in ids), limit=60
        )
    finally:
        runner.stop()
        await runner.wait()


async def test_a_global_limit_below_the_workers_claims_each_freed_slot_at_once(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    ids = STEP.enqueue_many(store, list(range(12)))
    await run_all(store, ids, jobtable.Queue("q", concurrency=1), wait_until)


async def test_a_partition_limit_claims_the_keys_next_job_when_its_slot_frees(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    ids = STEP.enqueue_many(store, list(range(12)), partition_key="one")
    await run_all(store, ids, jobtable.Queue("q", partition_limit=1), wait_until)


async def test_a_sequence_under_a_limit_moves_on_as_each_job_ends(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    ids = STEP.enqueue_many(store, list(range(8)), sequence_key="s")
    rate = jobtable.Rate(1000, per=datetime.timedelta(hours=1))
    await run_all(store, ids, jobtable.Queue("q", rate=rate), wait_until)
