"""Batch kinds: many jobs in one handler call, each job's outcome, retry and result its own.

Each test runs on both engines, with a real runner; the handler's calls are
counted in lists, not mocks.
"""

import asyncio
import datetime
import threading
from collections.abc import Awaitable, Callable, Sequence

import pytest
from started import run_until

import jobtable
from jobtable.testing import drain

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

SECRET = "token=hunter2-from-a-dependency"
HOUR = datetime.timedelta(hours=1)


def doubling(
    size: int, max_wait: datetime.timedelta, **options: object
) -> jobtable.BatchKind[int, int]:
    return jobtable.BatchKind(
        "double",
        int,
        int,
        batch=jobtable.Batch(size=size, max_wait=max_wait),
        **options,  # type: ignore[arg-type]
    )


async def test_queued_jobs_reach_the_handler_together_and_each_gets_its_result(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, HOUR)
    ids = kind.enqueue_many(store, range(40))
    calls: list[list[int]] = []
    runner = jobtable.Runner(store, workers=20, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append([job.payload for job in jobs])
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    assert max(len(call) for call in calls) > 1
    assert max(len(call) for call in calls) <= 10
    assert sorted(p for call in calls for p in call) == list(range(40))
    assert [kind.get(store, job_id).result for job_id in ids] == [2 * n for n in range(40)]


async def test_a_batch_as_large_as_its_queues_workers_runs_without_waiting(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    # Three workers can hold at most three jobs: the batch cannot grow, so it
    # runs at once rather than after its hour of max_wait.
    kind = doubling(100, HOUR)
    ids = kind.enqueue_many(store, range(9))
    calls: list[int] = []
    runner = jobtable.Runner(store, workers=3, poll_interval=0.05)

    @runner.handler(kind)
    def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append(len(jobs))
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    assert sum(calls) == 9
    assert max(calls) <= 3


async def test_a_lone_job_runs_once_max_wait_passes(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(50, datetime.timedelta(milliseconds=50))
    [job_id] = kind.enqueue_many(store, [21])
    calls: list[list[str]] = []
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append([job.ctx.id for job in jobs])
        return [job.payload * 2 for job in jobs]

    await run_until(runner, [job_id], wait_until, finished)
    assert calls == [[job_id]]
    assert kind.get(store, job_id).result == 42


async def test_each_job_gets_its_own_outcome_a_failure_among_successes(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20), max_attempts=3)
    ids = kind.enqueue_many(store, range(6))
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int | jobtable.Failure]:
        return [
            jobtable.Failure(f"odd {job.payload}") if job.payload % 2 else job.payload * 2
            for job in jobs
        ]

    await run_until(runner, ids, wait_until, finished)
    for n, job_id in enumerate(ids):
        job = kind.get(store, job_id)
        if n % 2:
            # A Failure is final, for its job alone.
            assert (job.status, job.error) == ("failed", f"odd {n}")
            assert store.inspect(job_id).attempt == 1
        else:
            assert (job.status, job.result) == ("succeeded", 2 * n)


async def test_a_retry_outcome_runs_its_job_again_alone(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20))
    ids = kind.enqueue_many(store, range(4))
    seen: list[tuple[int, int]] = []
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(
        jobs: Sequence[jobtable.BatchJob[int, int]],
    ) -> list[int | jobtable.Retry]:
        seen.extend((job.payload, job.ctx.attempt) for job in jobs)
        return [
            jobtable.Retry() if job.payload == 3 and job.ctx.attempt == 1 else job.payload * 2
            for job in jobs
        ]

    await run_until(runner, ids, wait_until, finished)
    assert sorted(seen) == [(0, 1), (1, 1), (2, 1), (3, 1), (3, 2)]
    assert [kind.get(store, i).result for i in ids] == [0, 2, 4, 6]


async def test_a_handler_exception_retries_every_job_of_the_call_and_stores_no_text(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20), max_attempts=2)
    ids = kind.enqueue_many(store, range(5))
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        if any(job.ctx.attempt == 1 for job in jobs):
            raise RuntimeError(SECRET)
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    for n, job_id in enumerate(ids):
        record = store.inspect(job_id)
        assert (record.status, record.attempt) == ("succeeded", 2)
        assert kind.get(store, job_id).result == 2 * n
        assert [e.error for e in record.errors] == [jobtable.MESSAGE_INTERNAL]
        assert SECRET not in repr(record)


async def test_a_handler_that_returns_the_wrong_count_fails_every_job_of_the_call(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20))
    ids = kind.enqueue_many(store, range(3))
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        return [1]

    await run_until(runner, ids, wait_until, finished)
    for job_id in ids:
        job = kind.get(store, job_id)
        assert (job.status, job.error) == ("failed", jobtable.MESSAGE_INTERNAL)


async def test_a_queues_concurrency_limit_counts_each_job_of_a_batch(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20))
    ids = kind.enqueue_many(store, range(12))
    calls: list[int] = []
    runner = jobtable.Runner(
        store, workers=10, poll_interval=0.05, flow=[jobtable.Queue("default", concurrency=2)]
    )

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append(len(jobs))
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    assert sum(calls) == 12
    assert max(calls) <= 2
    assert [kind.get(store, i).result for i in ids] == [2 * n for n in range(12)]


async def test_each_waiter_gets_its_own_jobs_result(store: jobtable.Store) -> None:
    kind = doubling(5, datetime.timedelta(milliseconds=20))
    runner = jobtable.Runner(store, workers=5, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int | jobtable.Failure]:
        return [jobtable.Failure("four") if j.payload == 4 else j.payload * 2 for j in jobs]

    ids = kind.enqueue_many(store, range(5))
    await runner.start()
    try:
        waited = await asyncio.gather(
            *(kind.await_result(store, i, timeout=60) for i in ids), return_exceptions=True
        )
    finally:
        runner.stop()
        await runner.wait()
    assert waited[:4] == [0, 2, 4, 6]
    assert isinstance(waited[4], jobtable.JobFailed)


async def test_a_cancelled_job_leaves_the_call_to_the_others(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(2, HOUR)
    slow, fast = kind.enqueue_many(store, [0, 1])
    release = threading.Event()
    runner = jobtable.Runner(store, workers=2, poll_interval=0.05, cancel_check=0.05)
    called = asyncio.Event()

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        called.set()
        await asyncio.to_thread(release.wait, 60)
        return [job.payload * 2 for job in jobs]

    await runner.start()
    try:
        await asyncio.wait_for(called.wait(), 60)
        store.cancel(slow)
        await wait_until(lambda: store.inspect(slow).status == "cancelled", limit=60)
        release.set()
        await wait_until(finished(runner, [fast]), limit=60)
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    assert kind.get(store, fast).result == 2


def test_a_batch_handler_must_take_the_sequence_of_jobs(store: jobtable.Store) -> None:
    kind = doubling(5, HOUR)
    runner = jobtable.Runner(store)

    def single(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    with pytest.raises(TypeError, match="takes one argument, the sequence of jobs"):
        runner.handler(kind)(single)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("size", "max_wait", "error", "says"),
    [
        (0, HOUR, ValueError, "size must be 1 or more"),
        (True, HOUR, TypeError, "size must be an int"),
        (5, 1.0, TypeError, "max_wait must be a datetime.timedelta"),
        (5, -HOUR, ValueError, "max_wait must not be negative"),
    ],
)
def test_a_bad_batch_is_refused_naming_what_is_wrong(
    size: object, max_wait: object, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        jobtable.Batch(size=size, max_wait=max_wait)  # type: ignore[arg-type]


def test_a_batch_kind_needs_a_batch() -> None:
    with pytest.raises(TypeError, match=r"batch must be a jobtable.Batch\(size=..., max_wait"):
        jobtable.BatchKind("b", int, int, batch=10)  # type: ignore[arg-type]


async def test_a_batch_kinds_jobs_in_a_workflow_feed_and_settle_their_dependents_per_job(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20))
    after = jobtable.Kind("after", int, int)
    wf = jobtable.Workflow("batched")
    nodes = [wf.add(kind, n) for n in range(4)]
    fed = [wf.add(after, node) for node in nodes]
    wf.enqueue(store)
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int | jobtable.Failure]:
        return [jobtable.Failure("two") if j.payload == 2 else j.payload * 2 for j in jobs]

    @runner.handler(after)
    async def plus_one(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload + 1

    ids = [node.id for node in fed]
    done = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED, jobtable.Status.CANCELLED)
    await runner.start()
    try:
        await wait_until(lambda: all(store.inspect(i).status in done for i in ids), limit=60)
    finally:
        runner.stop()
        await runner.wait()
    assert [store.inspect(i).status for i in ids] == [
        "succeeded",
        "succeeded",
        "cancelled",
        "succeeded",
    ]
    assert [after.get(store, i).result for i in (ids[0], ids[1], ids[3])] == [1, 3, 7]


async def test_a_job_that_times_out_ends_alone_and_the_call_goes_on_for_the_others(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(2, HOUR)
    quick = kind.enqueue(store, 1)
    slow = kind.enqueue(store, 2, timeout=0.2)
    release = threading.Event()
    runner = jobtable.Runner(store, workers=2, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        # Waits until the slow job's attempt timed out: its context says so.
        await asyncio.to_thread(release.wait, 60)
        return [job.payload * 2 for job in jobs]

    await runner.start()
    try:
        await wait_until(lambda: store.inspect(slow).status == "failed", limit=60)
        release.set()
        await wait_until(finished(runner, [quick]), limit=60)
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    assert kind.get(store, slow).error == jobtable.MESSAGE_TIMED_OUT
    assert kind.get(store, quick).result == 2


async def test_a_stop_calls_the_batch_gathering_at_once_instead_of_after_max_wait(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    kind = doubling(50, HOUR)
    [job_id] = kind.enqueue_many(store, [4])
    joined = asyncio.Event()
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05, grace_period=60)

    @runner.hooks.around_attempt
    async def note(ctx: jobtable.JobContext[object], call_next: jobtable.CallNext) -> object:
        joined.set()
        return await call_next()

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        return [job.payload * 2 for job in jobs]

    await runner.start()
    try:
        await asyncio.wait_for(joined.wait(), 60)
    finally:
        runner.stop()
        await runner.wait()
    # Recorded within the grace period, not interrupted: the stop called the batch.
    assert kind.get(store, job_id).result == 8


async def test_drain_runs_a_batch_kinds_jobs_one_per_call(store: jobtable.Store) -> None:
    kind = doubling(10, HOUR)
    ids = kind.enqueue_many(store, range(3))
    calls: list[int] = []
    runner = jobtable.Runner(store, workers=10)

    @runner.handler(kind)
    def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append(len(jobs))
        return [job.payload * 2 for job in jobs]

    records = await drain(runner)
    assert calls == [1, 1, 1]
    assert {r.id: r.result for r in records} == dict(zip(ids, [0, 2, 4], strict=True))


async def test_a_unique_batch_kind_stores_one_job_per_key_and_frees_it_per_job(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20), unique=jobtable.Unique())
    results = kind.enqueue_many_results(store, [1, 2, 1, 2, 3])
    assert [r.duplicate for r in results] == [False, False, True, True, False]
    ids = [r.id for r in results if not r.duplicate]
    seen: list[int] = []
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        seen.extend(job.payload for job in jobs)
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    assert sorted(seen) == [1, 2, 3]
    # Each job freed its own key when it succeeded.
    assert not kind.enqueue_result(store, 1).duplicate


async def test_a_partition_limit_admits_each_job_of_a_batch_by_its_own_key(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    partition = jobtable.Partition(lambda n: str(n % 3))
    kind = doubling(10, datetime.timedelta(milliseconds=20), partition=partition)
    ids = kind.enqueue_many(store, range(9))
    calls: list[list[int]] = []
    runner = jobtable.Runner(
        store, workers=10, poll_interval=0.05, flow=[jobtable.Queue("default", partition_limit=1)]
    )

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        calls.append([job.payload for job in jobs])
        return [job.payload * 2 for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    # One job per key at a time: no call holds two jobs of one key.
    assert all(len({p % 3 for p in call}) == len(call) for call in calls)
    assert sorted(p for call in calls for p in call) == list(range(9))


async def test_the_call_is_cancelled_once_no_job_of_it_waits(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    kind = doubling(2, HOUR, timeout=0.3)
    ids = kind.enqueue_many(store, [1, 2])
    called, ended = asyncio.Event(), asyncio.Event()
    runner = jobtable.Runner(store, workers=2, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        called.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            ended.set()
            raise
        return [job.payload * 2 for job in jobs]

    await runner.start()
    try:
        await asyncio.wait_for(called.wait(), 60)
        # Both jobs time out: nobody waits for the call any more.
        await asyncio.wait_for(ended.wait(), 60)
    finally:
        runner.stop()
        await runner.wait()
    assert [kind.get(store, i).error for i in ids] == [jobtable.MESSAGE_TIMED_OUT] * 2


async def test_a_batch_handler_adds_jobs_to_each_jobs_workflow_through_its_context(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    kind = doubling(10, datetime.timedelta(milliseconds=20))
    after = jobtable.Kind("added", int, int)
    wf = jobtable.Workflow("adding")
    nodes = [wf.add(kind, n) for n in range(3)]
    wf.enqueue(store)
    added: list[str] = []
    runner = jobtable.Runner(store, workers=10, poll_interval=0.05)

    @runner.handler(kind)
    async def double(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        for job in jobs:
            added.append(job.ctx.workflow.add(after, job.ctx.workflow.current).id)
        return [job.payload * 2 for job in jobs]

    @runner.handler(after)
    async def plus_one(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload + 1

    def done() -> bool:
        # The added jobs are stored with their adder's success, a moment after the call.
        try:
            return len(added) == 3 and all(store.inspect(i).status == "succeeded" for i in added)
        except jobtable.JobNotFound:
            return False

    await runner.start()
    try:
        await wait_until(done, limit=60)
    finally:
        runner.stop()
        await runner.wait()
    assert sorted(after.get(store, i).result or 0 for i in added) == [1, 3, 5]
    assert [kind.get(store, n.id).result for n in nodes] == [0, 2, 4]
