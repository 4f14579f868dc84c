"""An operator's delete that releases a held job wakes a runner: it need not wait for its poll.

A job of a sequence waits while an earlier job of its key that failed
blocks it. Deleting that job is what releases it, and the delete's
transaction wakes idle runners (on PostgreSQL a notice at commit; SQLite's
runners watch the file): the runner here never polls, so one that waited
for its poll would time out.
"""

from collections.abc import Awaitable, Callable

import pytest

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
NEVER = 3600.0
"""A poll interval no test waits for."""
STEP = jobtable.Kind("step", int, int, queue="q")


def delete_one(store: jobtable.Store, job_id: str) -> None:
    assert store.delete(job_id) is jobtable.DeleteResult.DELETED


def delete_many(store: jobtable.Store, job_id: str) -> None:
    assert store.delete_many([job_id]) == {job_id: jobtable.DeleteResult.DELETED}


def delete_matching(store: jobtable.Store, job_id: str) -> None:
    assert store.delete_matching(status="failed") == 1


@pytest.mark.parametrize(
    "delete", [delete_one, delete_many, delete_matching], ids=["delete", "many", "matching"]
)
async def test_deleting_the_failed_job_that_blocks_a_sequence_starts_the_next_at_once(
    store: jobtable.Store, wait_until: WaitUntil, delete: Callable[[jobtable.Store, str], None]
) -> None:
    first, second = STEP.enqueue_many(store, [1, 2], sequence_key="s")
    runner = jobtable.Runner(store, queues={"q": 2}, poll_interval=NEVER)

    @runner.handler(STEP)
    def step(ctx: jobtable.JobContext[int], n: int) -> int:
        if n == 1:
            raise jobtable.Failure("first fails")
        return n

    await runner.start()
    try:
        await wait_until(lambda: store.get(first).status is jobtable.Status.FAILED)
        assert store.inspect(second).waiting is not None  # held by the failed first
        delete(store, first)
        await wait_until(lambda: store.get(second).status is jobtable.Status.SUCCEEDED, limit=30)
    finally:
        runner.stop()
        await runner.wait()
