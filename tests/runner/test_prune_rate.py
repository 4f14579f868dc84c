"""The heartbeat's pruning keeps up with a flow of finished jobs larger than one batch a round.

One maintenance write deletes at most PRUNE_BATCH finished jobs; a runner
whose round found a full batch goes on deleting, batch after batch, so the
jobs finished in a round are gone by the next however many they are.
"""

import datetime
from collections.abc import Awaitable, Callable

import jobtable
from jobtable._runner.registration import PRUNE_BATCH

WaitUntil = Callable[..., Awaitable[None]]


async def noop(ctx: jobtable.JobContext[None], payload: int) -> None:
    pass


def job_count(store: jobtable.Store) -> int:
    return sum(sum(statuses.values()) for statuses in store.counts().values())


def beats_seen(store: jobtable.Store, name: str) -> Callable[[int], bool]:
    """A check that the runner name has written at least count heartbeats since it was made."""
    seen: set[datetime.datetime] = set()

    def check(count: int) -> bool:
        seen.update(r.heartbeat_at for r in store.runners() if r.name == name)
        return len(seen) > count

    return check


async def test_one_round_prunes_more_than_one_batch_of_finished_jobs(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    count = 3 * PRUNE_BATCH + PRUNE_BATCH // 2
    worker = jobtable.Runner(store, name="worker", workers=8, retention=None)
    worker.register("noop", noop).enqueue_many(list(range(count)))
    await worker.start()
    try:
        await wait_until(lambda: store.counts()["default"].get(jobtable.Status.SUCCEEDED) == count)
    finally:
        worker.stop()
        await worker.wait()
    # Rounds every 2 s, each with a second to prune: three rounds delete
    # 3 * PRUNE_BATCH jobs at most if each stopped at one batch.
    pruner = jobtable.Runner(store, name="pruner", lease=6.0, retention=datetime.timedelta(0))
    pruner.register("noop", noop)
    beats = beats_seen(store, "pruner")
    await pruner.start()
    try:
        # Its registration, then three rounds: each round prunes after its
        # heartbeat, so the third's heartbeat comes after the second's pruning.
        await wait_until(lambda: beats(3), limit=60)
    finally:
        pruner.stop()
        await pruner.wait()
    assert job_count(store) == 0


async def test_a_runner_s_pruning_takes_a_workflow_with_its_last_job(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store, name="pruner", retention=datetime.timedelta(0))
    kind = runner.register("noop", noop)
    wf = jobtable.Workflow("pruned")
    wf.add(kind, 2, after=[wf.add(kind, 1)])
    wf.enqueue(store)
    await runner.start()
    try:
        await wait_until(lambda: not store.workflows(), limit=60)
    finally:
        runner.stop()
        await runner.wait()
    assert job_count(store) == 0
