"""Running jobs: claim order, exactly one run per job, partial results, and what is stored.

Only a handler's typed result, a Failure's message or a message of the
runner's own reaches the table; every other exception is logged with its
traceback and stored as MESSAGE_INTERNAL.
"""

import asyncio
import collections
import gc
import json
import logging
import pathlib
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from handled import handled
from pydantic import BaseModel

import jobtable
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import NewJob
from jobtable._values import new_id, now

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

SECRET = "token=hunter2-from-a-dependency"

T = TypeVar("T")


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int
    url: str | None = None


async def make_thumbnail(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
    return Progress(done=3, total=3, url=f"/thumbs/{payload.photo_id}")


async def run_until_finished(
    runner: jobtable.Runner, ids: list[str], wait_until: WaitUntil, finished: Finished
) -> None:
    """Starts runner, waits until every job of ids finished, then stops it."""
    await runner.start()
    try:
        await wait_until(finished(runner, ids))
    finally:
        runner.stop()
        await runner.wait()


def records_of(
    caplog: pytest.LogCaptureFixture, level: int, message: str
) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == level and r.getMessage() == message]


def files_containing(folder: pathlib.Path, text: str) -> list[pathlib.Path]:
    return [path for path in folder.iterdir() if text.encode() in path.read_bytes()]


# Claim.


async def test_jobs_run_oldest_first_even_within_one_clock_tick(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    order: list[int] = []

    async def record(ctx: jobtable.JobContext[int], payload: int) -> int:
        order.append(payload)
        return payload

    runner = jobtable.Runner(store, workers=1)
    numbers = runner.register("number", record)
    # One enqueue_many stores every job with the same timestamp.
    ids = numbers.enqueue_many(range(50))
    ids += [numbers.enqueue(n) for n in range(50, 60)]
    await run_until_finished(runner, ids, wait_until, finished)
    assert order == list(range(60))


async def test_jobs_claimed_together_are_handed_to_workers_oldest_first(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    started: list[int] = []

    async def record(ctx: jobtable.JobContext[int], payload: int) -> int:
        started.append(payload)  # before the handler's first await: the order workers got them
        await asyncio.sleep(0)
        return payload

    # With 4 idle workers, one claim takes 4 jobs at once; the database does
    # not return them in order, so the runner must sort them.
    runner = jobtable.Runner(store, workers=4)
    numbers = runner.register("number", record)
    ids = numbers.enqueue_many(range(40))
    await run_until_finished(runner, ids, wait_until, finished)
    assert started == list(range(40))


async def test_run_next_runs_the_oldest_queued_job(store: jobtable.Store) -> None:
    order: list[int] = []

    async def record(ctx: jobtable.JobContext[int], payload: int) -> int:
        order.append(payload)
        return payload

    runner = jobtable.Runner(store)
    numbers = runner.register("number", record)
    ids = numbers.enqueue_many([1, 2])
    assert await runner.run_next() == ids[0]
    assert runner.get(ids[0]).status is jobtable.Status.SUCCEEDED
    assert runner.get(ids[1]).status is jobtable.Status.QUEUED
    assert await runner.run_next() == ids[1]
    assert await runner.run_next() is None
    assert order == [1, 2]


async def test_each_job_is_run_by_exactly_one_worker(
    store: jobtable.Store, store_target: str, wait_until: WaitUntil, finished: Finished
) -> None:
    runs: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    async def count_async(ctx: jobtable.JobContext[int], payload: int) -> int:
        with lock:
            runs[ctx.id] += 1
        await asyncio.sleep(0)
        return payload

    def count_sync(ctx: jobtable.JobContext[int], payload: int) -> int:
        with lock:
            runs[ctx.id] += 1
        return payload

    # Two runners, each with many workers; the second on a Store of its own,
    # as another process would be.
    first = jobtable.Runner(store, name="first", workers=8, poll_interval=0.05)
    a_first = first.register("a", count_async)
    s_first = first.register("s", count_sync)
    with jobtable.Store.open(store_target) as other_store:
        second = jobtable.Runner(other_store, name="second", workers=8, poll_interval=0.05)
        second.register("a", count_async)
        s_second = second.register("s", count_sync)
        await first.start()
        await second.start()
        ids: list[str] = []
        try:

            def enqueue_from_a_thread(n: int) -> None:
                for i in range(40):
                    ids.append(s_second.enqueue(n * 100 + i) if i % 2 else s_first.enqueue(i))

            async def enqueue_from_a_task() -> None:
                for i in range(20):
                    ids.extend(await a_first.aenqueue_many([i, i + 1]))

            threads = [threading.Thread(target=enqueue_from_a_thread, args=(n,)) for n in range(3)]
            for thread in threads:
                thread.start()
            await asyncio.gather(*(enqueue_from_a_task() for _ in range(3)))
            for thread in threads:
                await asyncio.to_thread(thread.join)
            assert len(ids) == 3 * 40 + 3 * 40
            await wait_until(finished(first, ids), limit=60)
        finally:
            first.stop()
            second.stop()
            await first.wait()
            await second.wait()
    assert set(runs) == set(ids)
    assert [job_id for job_id, n in runs.items() if n != 1] == []
    assert {first.get(i).status for i in ids} == {jobtable.Status.SUCCEEDED}


# Storing outcomes.


# The writes a runner makes on a timer, not per job: staging scheduled jobs
# once a poll interval, and the heartbeat. On a loaded machine a run of a few
# jobs can outlast either interval.
TIMED_WRITES = frozenset({"StageJobs", "Maintain"})


class CountingEngine:
    """A store's real engine, counting the writes handed to it but the timed ones."""

    def __init__(self, engine: Engine) -> None:
        self.inner = engine
        self.writes = 0

    def _count(self, op: object) -> None:
        if type(op).__name__ not in TIMED_WRITES:
            self.writes += 1

    def write(self, op: Callable[[Queries], T]) -> T:
        self._count(op)
        return self.inner.write(op)

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        self._count(op)
        return await self.inner.awrite(op)

    def read(self, op: Callable[[Queries], T]) -> T:
        return self.inner.read(op)

    async def aread(self, op: Callable[[Queries], T]) -> T:
        return await self.inner.aread(op)

    def write_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        return self.inner.write_in(conn, op, where)

    async def awrite_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        return await self.inner.awrite_in(conn, op, where)

    def read_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        return self.inner.read_in(conn, op, where)

    async def aread_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        return await self.inner.aread_in(conn, op, where)

    def listen(
        self,
        wake: Callable[[], None],
        cancelled: Callable[[], None] | None = None,
        ready: Callable[[str], None] | None = None,
    ) -> Callable[[], None] | None:
        return self.inner.listen(wake, cancelled, ready)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("workers", [1, 4])
async def test_a_jobs_outcome_commits_in_the_write_that_claims_the_next_job(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished, workers: int
) -> None:
    async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
        return 2 * payload

    counting = CountingEngine(store.engine)
    runner = jobtable.Runner(jobtable.Store(counting, target="counting"), workers=workers)
    numbers = runner.register("number", double)
    ids = numbers.enqueue_many(range(40))
    counting.writes = 0

    await run_until_finished(runner, ids, wait_until, finished)

    assert [numbers.get(i).result for i in ids] == [2 * n for n in range(40)]
    # One write per claim, storing the outcomes of the jobs before it, plus
    # the start, the claim that finds the queue empty and the goodbye; a
    # write for each outcome and another for each claim would make two per
    # job. Four workers' no-op jobs end in one turn of the event loop, and
    # the worker that claims next waits that turn out, so one write stores
    # four outcomes and claims four jobs.
    assert counting.writes <= len(ids) // workers + 5


class HoldingEngine(CountingEngine):
    """A store's real engine whose claims wait, once hold is set, until release is.

    hold "before" holds a claim before it runs, "after" once it committed.
    """

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.hold: str | None = None
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def _held(self) -> None:
        self.held.set()
        await self.release.wait()

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        claims = getattr(op, "max_jobs", 0) > 0
        if claims and self.hold == "before":
            await self._held()
        done = await super().awrite(op)
        if claims and self.hold == "after":
            await self._held()
        return done


async def test_the_jobs_of_a_claim_under_way_when_stop_begins_still_run(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    gate = asyncio.Event()

    async def gated(ctx: jobtable.JobContext[int], payload: int) -> int:
        await gate.wait()
        return payload

    holding = HoldingEngine(store.engine)
    runner = jobtable.Runner(jobtable.Store(holding, target="holding"), workers=3)
    numbers = runner.register("number", gated)
    first = numbers.enqueue(0)
    await runner.start()
    try:
        await wait_until(lambda: runner.get(first).status is jobtable.Status.RUNNING)
        # Two workers are free: the next claim is for both, and it waits.
        holding.hold = "before"
        later = numbers.enqueue_many([1, 2])
        await wait_until(holding.held.is_set)
        runner.stop()
        holding.release.set()
        gate.set()
    finally:
        holding.release.set()
        gate.set()
        await runner.wait()
    # Claimed, the jobs ran: none was left running with no worker to run it.
    assert [runner.get(i).status for i in [first, *later]] == [jobtable.Status.SUCCEEDED] * 3


async def test_a_job_enqueued_elsewhere_while_a_claim_finds_none_is_not_missed(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
        return 2 * payload

    holding = HoldingEngine(store.engine)
    holding.hold = "after"
    # Polling an hour apart, only the enqueue's wake can find the job in time.
    runner = jobtable.Runner(
        jobtable.Store(holding, target="holding"), workers=1, poll_interval=3600
    )
    numbers = runner.register("number", double)
    await runner.start()
    try:
        # The first claim found the queue empty; before the claimer waits, a
        # job commits from another thread.
        await wait_until(holding.held.is_set)
        job_id = await asyncio.to_thread(numbers.enqueue, 21)
        holding.hold = None
        holding.release.set()
        await wait_until(finished(runner, [job_id]))
    finally:
        holding.release.set()
        runner.stop()
        await runner.wait()
    assert numbers.get(job_id).result == 42


async def test_an_attempt_that_ends_before_its_timeout_leaves_no_timer_behind(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    quick = jobtable.Kind("quick", int, int, timeout=0.05)
    untimed = jobtable.Kind("untimed", int, int)
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(quick)
    async def run_quick(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    @runner.handler(untimed)
    async def run_untimed(ctx: jobtable.JobContext[int], payload: int) -> int:
        # Well past the first job's timeout, on the same worker and task.
        await asyncio.sleep(0.3)
        return payload

    ids = [quick.enqueue(store, 1), untimed.enqueue(store, 2)]
    await run_until_finished(runner, ids, wait_until, finished)
    assert [runner.get(i).status for i in ids] == [jobtable.Status.SUCCEEDED] * 2


async def test_a_lone_jobs_outcome_is_stored_at_once_not_with_a_later_claim(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
        return 2 * payload

    # Polling an hour apart, only the outcome's own write can store it in time.
    runner = jobtable.Runner(store, workers=2, poll_interval=3600)
    numbers = runner.register("number", double)
    await runner.start()
    try:
        for n in (1, 2):
            job_id = numbers.enqueue(n)
            await wait_until(
                lambda job_id=job_id: runner.get(job_id).status is jobtable.Status.SUCCEEDED,
                limit=10.0,
            )
    finally:
        runner.stop()
        await runner.wait()


# Publish.


async def test_partial_results_are_visible_through_get_while_the_job_runs(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    steps = [asyncio.Event() for _ in range(4)]

    async def handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        for done, step in enumerate(steps):
            await ctx.apublish(Progress(done=done, total=len(steps)))
            await step.wait()
        return Progress(done=len(steps), total=len(steps), url="/done")

    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", handler)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=1))
    await runner.start()
    try:
        for done, step in enumerate(steps):
            partial = {"done": done, "total": len(steps), "url": None}
            await wait_until(lambda partial=partial: runner.get(job_id).result == partial)
            job = runner.get(job_id)
            assert (job.status, job.error) == (jobtable.Status.RUNNING, None)
            step.set()
        await wait_until(finished(runner, [job_id]))
    finally:
        for step in steps:
            step.set()
        runner.stop()
        await runner.wait()
    assert thumbnails.get(job_id).result == Progress(done=4, total=4, url="/done")


async def test_partial_results_of_a_sync_handler_are_visible_through_get(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    steps = [threading.Event() for _ in range(3)]

    def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        for done, step in enumerate(steps):
            ctx.publish(done)
            if not step.wait(30):
                raise AssertionError("the test never released the handler")
        return payload

    runner = jobtable.Runner(store)
    numbers = runner.register("number", handler)
    job_id = numbers.enqueue(99)
    await runner.start()
    try:
        for done, step in enumerate(steps):
            await wait_until(lambda done=done: numbers.get(job_id).result == done)
            assert numbers.get(job_id).status is jobtable.Status.RUNNING
            step.set()
        await wait_until(finished(runner, [job_id]))
    finally:
        for step in steps:
            step.set()
        runner.stop()
        await runner.wait()
    assert numbers.get(job_id).result == 99


async def test_publish_for_a_job_that_is_no_longer_running_raises_not_running(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    in_handler = asyncio.Event()
    release = asyncio.Event()
    raised: list[BaseException] = []

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        await release.wait()
        try:
            await ctx.apublish(1)
        except jobtable.NotRunning as err:
            raised.append(err)
        return 2

    runner = jobtable.Runner(store, name="worker")
    numbers = runner.register("number", handler)
    job_id = numbers.enqueue(0)
    await runner.start()
    try:
        await wait_until(in_handler.is_set)
        # The job's claim is taken away from outside: a fenced write of the
        # claim's own attempt, as the row's owner would make it.
        changed = store.engine.write(
            lambda q: q.fail_job(
                error="taken away", now=now(), id=job_id, attempt=1, run_trace=None
            )
        )
        assert changed == 1
        release.set()
        await wait_until(lambda: bool(raised))
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    assert isinstance(raised[0], jobtable.NotRunning)
    assert job_id in str(raised[0])
    # The handler's outcome is fenced too: it does not overwrite the job.
    job = runner.get(job_id)
    assert (job.status, job.result, job.error) == (jobtable.Status.FAILED, None, "taken away")


async def test_publish_after_a_restart_under_the_same_name_raises_not_running_from_a_sync_handler(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = threading.Event()
    release = threading.Event()
    raised: list[BaseException] = []

    def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        ctx.publish(1)
        in_handler.set()
        if not release.wait(30):
            raise AssertionError("the test never released the handler")
        try:
            ctx.publish(2)
        except jobtable.NotRunning as err:
            raised.append(err)
        return 3

    runner = jobtable.Runner(store, name="worker")
    numbers = runner.register("number", handler)
    job_id = numbers.enqueue(0)
    await runner.start()
    try:
        await wait_until(in_handler.is_set)
        # Another runner starts under the same name: it takes this one for a
        # previous process, and fails its running job.
        restarted = handled(jobtable.Runner(store, name="worker"))
        await restarted.start()
        restarted.stop()
        await restarted.wait()
        release.set()
        await wait_until(lambda: bool(raised))
    finally:
        release.set()
        runner.stop()
        await runner.wait()
    job = runner.get(job_id)
    assert (job.status, job.result, job.error) == (
        jobtable.Status.FAILED,
        1,
        jobtable.MESSAGE_INTERRUPTED,
    )


# Success and Get.


async def test_the_final_result_is_stored_as_json(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=256))
    await run_until_finished(runner, [job_id], wait_until, finished)
    job = runner.get(job_id)
    assert job.status is jobtable.Status.SUCCEEDED
    assert job.result == {"done": 3, "total": 3, "url": "/thumbs/p1"}
    assert job.error is None
    stored = store.engine.read(lambda q: q.get_job(id=job_id))
    assert stored is not None
    assert json.loads(stored.result or "") == {"done": 3, "total": 3, "url": "/thumbs/p1"}


async def test_job_json_has_exactly_id_kind_status_result_error(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=256))
    assert json.loads(runner.get(job_id).model_dump_json()) == {
        "id": job_id,
        "kind": "thumbnail",
        "status": "queued",
        "result": None,
        "error": None,
    }
    await run_until_finished(runner, [job_id], wait_until, finished)
    assert json.loads(runner.get(job_id).model_dump_json()) == {
        "id": job_id,
        "kind": "thumbnail",
        "status": "succeeded",
        "result": {"done": 3, "total": 3, "url": "/thumbs/p1"},
        "error": None,
    }
    assert json.loads(thumbnails.get(job_id).model_dump_json()) == json.loads(
        runner.get(job_id).model_dump_json()
    )


async def test_kind_get_returns_the_result_parsed_as_the_result_type(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    job_id = thumbnails.enqueue(Thumbnail(photo_id="p1", size=256))
    await run_until_finished(runner, [job_id], wait_until, finished)
    job = thumbnails.get(job_id)
    assert isinstance(job.result, Progress)
    assert job.result == Progress(done=3, total=3, url="/thumbs/p1")
    assert (await thumbnails.aget(job_id)) == job


async def test_result_is_null_until_the_first_publish(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    in_handler = asyncio.Event()
    release = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        await release.wait()
        await ctx.apublish(1)
        await ctx.asleep(3600)
        return 2

    runner = jobtable.Runner(store, grace_period=30)
    numbers = runner.register("number", handler)
    job_id = numbers.enqueue(0)
    await runner.start()
    try:
        await wait_until(in_handler.is_set)
        job = runner.get(job_id)
        assert (job.status, job.result, job.error) == (jobtable.Status.RUNNING, None, None)
        release.set()
        await wait_until(lambda: runner.get(job_id).result == 1)
    finally:
        release.set()
        runner.stop()
        await runner.wait()


def test_get_of_an_unknown_id_raises_job_not_found(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    with pytest.raises(jobtable.JobNotFound, match="nope"):
        runner.get("nope")
    with pytest.raises(jobtable.JobNotFound):
        thumbnails.get(new_id())
    assert issubclass(jobtable.JobNotFound, LookupError)


async def test_aget_of_an_unknown_id_raises_job_not_found(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    with pytest.raises(jobtable.JobNotFound):
        await runner.aget("nope")
    with pytest.raises(jobtable.JobNotFound):
        await thumbnails.aget("nope")


def test_kind_get_of_a_job_of_another_kind_raises_job_not_found(store: jobtable.Store) -> None:
    async def other(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    runner = jobtable.Runner(store)
    thumbnails = runner.register("thumbnail", make_thumbnail)
    numbers = runner.register("number", other)
    job_id = numbers.enqueue(1)
    with pytest.raises(jobtable.JobNotFound, match="'number'"):
        thumbnails.get(job_id)
    assert runner.get(job_id).kind == "number"


# Failure and other errors.


async def test_a_failure_message_is_stored_as_the_jobs_error(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        await ctx.apublish(1)
        raise jobtable.Failure("That size is too large.")

    def sync_handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Failure("Not in sync.")

    runner = jobtable.Runner(store)
    ids = [
        runner.register("number", handler).enqueue(0),
        runner.register("sync", sync_handler).enqueue(0),
    ]
    await run_until_finished(runner, ids, wait_until, finished)
    assert json.loads(runner.get(ids[0]).model_dump_json()) == {
        "id": ids[0],
        "kind": "number",
        "status": "failed",
        "result": 1,
        "error": "That size is too large.",
    }
    assert runner.get(ids[1]).error == "Not in sync."


@pytest.mark.parametrize("style", ["async", "sync"])
async def test_any_other_exception_stores_the_internal_message_and_logs_the_traceback(
    store: jobtable.Store,
    engine: str,
    tmp_path: pathlib.Path,
    style: str,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def async_handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise RuntimeError(f"GET https://api.example/?{SECRET} answered 500")

    def sync_handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise RuntimeError(f"GET https://api.example/?{SECRET} answered 500")

    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store)
    numbers = runner.register("number", async_handler if style == "async" else sync_handler)
    job_id = numbers.enqueue(0)
    await run_until_finished(runner, [job_id], wait_until, finished)

    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert SECRET not in job.model_dump_json()
    assert SECRET not in numbers.get(job_id).model_dump_json()
    [record] = [r for r in caplog.records if r.exc_info and SECRET in str(r.exc_info[1])]
    assert record.levelno == logging.ERROR
    assert record.__dict__["job_id"] == job_id
    assert record.__dict__["kind"] == "number"
    assert record.exc_info is not None
    assert record.exc_info[2] is not None  # the traceback
    if engine == "sqlite":
        # Neither the database file nor its WAL, before or after a checkpoint.
        assert files_containing(tmp_path, SECRET) == []
        store.close()
        assert files_containing(tmp_path, SECRET) == []


async def test_a_result_that_is_not_of_the_result_type_fails_the_job_as_internal(
    store: jobtable.Store,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        return "not a number"  # type: ignore[return-value]

    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store)
    job_id = runner.register("number", handler).enqueue(0)
    await run_until_finished(runner, [job_id], wait_until, finished)
    assert runner.get(job_id).error == jobtable.MESSAGE_INTERNAL
    assert [r.__dict__["job_id"] for r in records_of(caplog, logging.ERROR, "job failed")] == [
        job_id
    ]


async def test_publishing_a_partial_of_the_wrong_type_raises_to_the_handler(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    raised: list[Exception] = []

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        try:
            await ctx.apublish("half")  # type: ignore[arg-type]
        except Exception as err:
            raised.append(err)
        return 1

    runner = jobtable.Runner(store)
    job_id = runner.register("number", handler).enqueue(0)
    await run_until_finished(runner, [job_id], wait_until, finished)
    assert len(raised) == 1
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, 1)


# Jobs the runner cannot run.


async def test_a_job_of_an_unknown_kind_fails_with_no_handler_for_job_kind(
    store: jobtable.Store,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    # Another application registered a kind this runner does not know.
    other = jobtable.Runner(store, name="other")
    ghost_id = other.register("ghost", make_thumbnail).enqueue(Thumbnail(photo_id="p", size=1))
    runner = jobtable.Runner(store)
    runner.register("thumbnail", make_thumbnail)
    await run_until_finished(runner, [ghost_id], wait_until, finished)
    job = runner.get(ghost_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, "no handler for job kind ghost")
    [record] = records_of(caplog, logging.ERROR, "no handler for job kind ghost")
    fields = (record.__dict__["job_id"], record.__dict__["kind"], record.__dict__["attempt"])
    assert fields == (ghost_id, "ghost", 1)


async def test_a_stored_payload_with_an_unknown_field_fails_as_internal_and_logs_the_cause(
    store: jobtable.Store,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[Thumbnail] = []

    async def handler(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
        calls.append(payload)
        return Progress(done=1, total=1)

    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store)
    runner.register("thumbnail", handler)
    job_id = new_id()
    payload = json.dumps({"photo_id": "p1", "size": 1, "watermark": "yes"})

    def create(q: Queries) -> None:
        q.insert_jobs(kind="thumbnail", jobs=[NewJob(job_id, payload, now())], now=now())

    store.engine.write(create)
    await run_until_finished(runner, [job_id], wait_until, finished)
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert calls == []
    [record] = records_of(caplog, logging.ERROR, "job failed")
    assert record.__dict__["job_id"] == job_id
    assert record.exc_info is not None
    assert "watermark" in str(record.exc_info[1])


class ThumbnailV1(BaseModel):
    photo_id: str


async def test_a_stored_payload_that_no_longer_validates_fails_finally_with_a_message_saying_so(
    store: jobtable.Store,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Enqueued by code whose payload type had no size; the handler's now requires one.
    old = jobtable.Kind("thumbnail", ThumbnailV1, Progress, max_attempts=3)
    job_id = old.enqueue(store, ThumbnailV1(photo_id="p1-secret-photo"))
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store)
    runner.register("thumbnail", make_thumbnail)
    await run_until_finished(runner, [job_id], wait_until, finished)
    record = store.inspect(job_id)
    assert (record.status, record.error) == (
        jobtable.Status.FAILED,
        jobtable.MESSAGE_PAYLOAD_MISMATCH,
    )
    assert record.attempt == 1  # final: another attempt would read the same payload
    assert "p1-secret-photo" not in record.model_dump_json(exclude={"payload"})
    [logged] = records_of(caplog, logging.ERROR, f"job failed: {jobtable.MESSAGE_PAYLOAD_MISMATCH}")
    assert logged.exc_info is not None
    assert "size" in str(logged.exc_info[1])  # pydantic's "Field required", in the log only


async def test_a_handler_raising_cancelled_error_unasked_fails_its_job_and_keeps_the_worker(
    store: jobtable.Store,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A handler awaiting a future that something else cancelled sees
    # CancelledError although nobody cancelled the worker: that is the
    # handler's failure, not a shutdown.
    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        if payload == 0:
            abandoned = asyncio.get_running_loop().create_future()
            abandoned.cancel()
            await abandoned
        return payload

    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, workers=1)
    ids = runner.register("number", handler).enqueue_many([0, 1])
    await run_until_finished(runner, ids, wait_until, finished)
    assert [runner.get(i).status for i in ids] == [
        jobtable.Status.FAILED,
        jobtable.Status.SUCCEEDED,
    ]
    assert runner.get(ids[0]).error == jobtable.MESSAGE_INTERNAL
    [record] = records_of(caplog, logging.ERROR, "job failed")
    assert record.__dict__["job_id"] == ids[0]


async def ping(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


async def test_run_inside_a_running_event_loop_says_to_await_start_and_wait(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, workers=1)
    runner.register("ping", ping)
    # Warnings are errors here: asyncio's "coroutine ... was never awaited" would fail the test.
    with pytest.raises(
        jobtable.RunnerError, match=r"use `await runner\.start\(\)`.*`await runner\.wait\(\)`"
    ):
        runner.run()
    gc.collect()
    # Nothing was started: the runner starts as usual afterwards.
    await runner.start()
    runner.stop()
    await runner.wait()


def test_a_runners_timings_report_its_settings_and_cannot_be_reassigned(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(
        store, poll_interval=0.25, lease=12.0, grace_period=3.0, max_result_bytes=4096
    )
    assert (runner.poll_interval, runner.lease, runner.grace_period) == (0.25, 12.0, 3.0)
    assert runner.max_result_bytes == 4096
    for name in ("poll_interval", "lease", "grace_period", "max_result_bytes"):
        with pytest.raises(AttributeError):
            setattr(runner, name, 1)
