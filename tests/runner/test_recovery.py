"""Recovery: runners sharing a database, crashed runners, failed claims, and retention.

A start fails the jobs an earlier runner of the same name left running, and a
live runner fails those of runners whose heartbeat lease expired, but never
the jobs of a live runner. A claim whose reply was lost is put back by its own
runner, its attempt unused, but not while it may still be on its way. A claim that fails is
logged and retried with a growing wait, and the heartbeat prunes finished
jobs older than retention.
"""

import asyncio
import contextlib
import datetime
import logging
import pathlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterator

import pytest
from handled import handled

import jobtable
from jobtable._engines.base import Queries
from jobtable._runner.maintenance import DEAD_RUNNERS, NEVER_RECEIVED, RESTARTED
from jobtable._values import now, timestamp

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload * 2


def claim_as(store: jobtable.Store, runner: str, max_jobs: int) -> list[str]:
    """Claims queued jobs for a runner that is not running here: a crashed process."""

    def claim(q: Queries) -> list[str]:
        return [
            row.id
            for row in q.finish_and_claim_jobs(
                outcomes=[],
                queue="default",
                runner=runner,
                now=now(),
                max_jobs=max_jobs,
            )[1]
        ]

    return store.engine.write(claim)


def register_runner(store: jobtable.Store, name: str, heartbeat: datetime.datetime) -> None:
    """Registers a runner that last beat at heartbeat (by the database's clock)."""
    store.engine.write(
        lambda q: q.register_runner(name=name, now=timestamp(heartbeat), host=None, process=None)
    )
    engine = store.engine
    if type(engine).__name__ == "PostgresEngine":
        # The server stamps heartbeats with its own clock: the test sets one.
        from jobtable._engines.postgres.engine import PostgresEngine

        assert isinstance(engine, PostgresEngine)
        with engine._pool.connection() as conn:
            conn.execute("UPDATE runners SET heartbeat_at = %s WHERE name = %s", (heartbeat, name))


def heartbeat_of(store: jobtable.Store, name: str) -> datetime.datetime | None:
    row = store.engine.read(lambda q: q.get_runner(name=name, now=now(), lease=30.0))
    return None if row is None else row.heartbeat_at


async def wait_for_heartbeats(
    store: jobtable.Store, name: str, count: int, wait_until: WaitUntil
) -> None:
    """Waits until runner name has renewed its lease count times (each renewal also prunes)."""
    seen: set[datetime.datetime | None] = {heartbeat_of(store, name)}

    def renewed() -> bool:
        seen.add(heartbeat_of(store, name))
        return len(seen - {None}) > count

    await wait_until(renewed)


def interrupted_warnings(caplog: pytest.LogCaptureFixture, message: str) -> list[int]:
    return [r.__dict__["count"] for r in caplog.records if r.msg == message]


async def test_start_fails_the_jobs_a_previous_runner_of_its_name_left_running(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, name="worker")
    numbers = runner.register("number", double)
    numbers.enqueue_many([1, 2, 3, 4])
    fresh = datetime.datetime.now(datetime.UTC)
    register_runner(store, "worker", fresh)
    register_runner(store, "other", fresh + datetime.timedelta(hours=1))
    left_running = claim_as(store, "worker", 3)
    of_other = claim_as(store, "other", 1)
    await runner.start()
    runner.stop()
    await runner.wait()
    for job_id in left_running:
        job = runner.get(job_id)
        assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
    assert runner.get(of_other[0]).status is jobtable.Status.RUNNING
    assert interrupted_warnings(caplog, RESTARTED) == [3]
    [warning] = [r for r in caplog.records if r.msg == RESTARTED]
    assert warning.levelno == logging.WARNING
    assert warning.getMessage() == RESTARTED % 3


async def test_start_with_nothing_left_running_logs_no_warning(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = handled(jobtable.Runner(store, name="worker"))
    await runner.start()
    runner.stop()
    await runner.wait()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_live_runners_jobs_are_never_failed_by_another_runners_start(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    in_handler = asyncio.Event()
    release = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        in_handler.set()
        await release.wait()
        await ctx.apublish(1)
        return 2

    live = jobtable.Runner(store, name="live", lease=0.5)
    job_id = live.register("work", handler).enqueue(0)
    await live.start()
    other = handled(jobtable.Runner(store, name="other", lease=0.5))
    try:
        await wait_until(in_handler.is_set)
        await other.start()
        # Longer than a lease: the other runner's heartbeats looked at it.
        await wait_for_heartbeats(store, "other", 4, wait_until)
        assert live.get(job_id).status is jobtable.Status.RUNNING
        release.set()
        await wait_until(finished(live, [job_id]))
    finally:
        release.set()
        live.stop()
        other.stop()
        await live.wait()
        await other.wait()
    job = live.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, 2)


async def test_a_dead_runners_jobs_are_failed_by_a_live_runner_within_the_lease(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, name="live", lease=0.5)
    numbers = runner.register("number", double)
    numbers.enqueue_many([1, 2])
    # A runner that beat just now, claimed two jobs and died: its lease is
    # still valid when the live runner starts.
    register_runner(store, "dead", datetime.datetime.now(datetime.UTC))
    left_running = claim_as(store, "dead", 2)
    await runner.start()
    try:
        await wait_until(
            lambda: all(runner.get(i).status is jobtable.Status.FAILED for i in left_running)
        )
    finally:
        runner.stop()
        await runner.wait()
    assert {runner.get(i).error for i in left_running} == {jobtable.MESSAGE_INTERRUPTED}
    counts = interrupted_warnings(caplog, DEAD_RUNNERS)
    counts += interrupted_warnings(caplog, RESTARTED)
    assert counts == [2]
    assert heartbeat_of(store, "dead") is None


async def test_a_runner_whose_lease_expired_long_ago_has_its_jobs_failed_at_start(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    runner = jobtable.Runner(store, name="live")
    numbers = runner.register("number", double)
    numbers.enqueue_many([1, 2, 3])
    register_runner(
        store, "dead", datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    )
    left_running = claim_as(store, "dead", 2)
    # Claimed with no runner row at all: no live runner owns it.
    orphan = claim_as(store, "gone", 1)
    await runner.start()
    runner.stop()
    await runner.wait()
    for job_id in [*left_running, *orphan]:
        assert runner.get(job_id).error == jobtable.MESSAGE_INTERRUPTED
    assert interrupted_warnings(caplog, RESTARTED) == [3]


@contextlib.contextmanager
def writes_failing(store: jobtable.Store, store_target: str) -> Iterator[None]:
    """Points store at a closed engine of the same database: every write fails, a real error."""
    working = store.engine
    with jobtable.Store.open(store_target) as broken:
        broken.close()
        store.engine = broken.engine
        try:
            yield
        finally:
            store.engine = working


def claim_retries(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "claim jobs; retrying"]


async def test_a_failed_claim_is_logged_and_retried_with_a_growing_wait_until_it_succeeds(
    store: jobtable.Store,
    store_target: str,
    wait_until: WaitUntil,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="jobtable")
    # Polling alone would find the job only after a minute: a worker parked
    # after a claim error, as jobs.go's work loop parks until a wake, would
    # never see it within the test.
    runner = jobtable.Runner(store, workers=2, poll_interval=60)
    runner.register("number", double)
    await runner.start()
    with jobtable.Store.open(store_target) as web:
        with writes_failing(store, store_target):
            runner.notify_enqueued()
            await wait_until(lambda: len(claim_retries(caplog)) >= 3)
            job_id = jobtable.Runner(web, name="web").register("number", double).enqueue(21)
        try:
            await wait_until(lambda: runner.get(job_id).status is jobtable.Status.SUCCEEDED)
        finally:
            runner.stop()
            await runner.wait()
    records = claim_retries(caplog)
    assert all(r.levelno == logging.ERROR and r.exc_info for r in records)
    waits = [r.__dict__["backoff"] for r in records]
    assert waits[:3] == sorted(waits[:3])
    assert waits[0] < waits[2] <= 5.0
    assert runner.get(job_id).result == 42


async def test_the_heartbeat_prunes_finished_jobs_older_than_retention_but_never_unfinished_ones(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    release = asyncio.Event()

    async def handler(ctx: jobtable.JobContext[int], payload: int) -> int:
        if payload == 0:
            raise jobtable.Failure("Zero.")
        if payload == 2:
            await release.wait()
        return payload

    runner = jobtable.Runner(
        store, name="pruner", workers=1, lease=0.3, retention=datetime.timedelta(0)
    )
    succeeded, failed, running, queued = runner.register("number", handler).enqueue_many(
        [1, 0, 2, 3]
    )

    def gone(job_id: str) -> bool:
        try:
            runner.get(job_id)
        except jobtable.JobNotFound:
            return True
        return False

    await runner.start()
    try:
        await wait_until(lambda: gone(succeeded) and gone(failed))
        await wait_for_heartbeats(store, "pruner", 3, wait_until)
        assert runner.get(running).status is jobtable.Status.RUNNING
        assert runner.get(queued).status is jobtable.Status.QUEUED
        release.set()
        await wait_until(lambda: gone(running) and gone(queued))
    finally:
        release.set()
        runner.stop()
        await runner.wait()


@pytest.mark.parametrize("retention", [datetime.timedelta(hours=1), None])
async def test_finished_jobs_younger_than_retention_are_kept(
    store: jobtable.Store,
    retention: datetime.timedelta | None,
    wait_until: WaitUntil,
    finished: Finished,
) -> None:
    runner = jobtable.Runner(store, name="keeper", lease=0.3, retention=retention)
    ids = runner.register("number", double).enqueue_many([1, 2])
    await runner.start()
    try:
        await wait_until(finished(runner, ids))
        await wait_for_heartbeats(store, "keeper", 3, wait_until)
    finally:
        runner.stop()
        await runner.wait()
    assert [runner.get(i).result for i in ids] == [2, 4]


async def test_a_claim_whose_reply_was_lost_is_put_back_by_its_own_runner_and_runs(
    store: jobtable.Store, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    """No handler ran the job: it goes back with its attempt unused, so even a last attempt runs."""
    caplog.set_level(logging.WARNING, logger="jobtable")
    runner = jobtable.Runner(store, name="worker", lease=0.5, poll_interval=0.05)
    kind = runner.register("double", double)
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=10)
    [job_id] = kind.enqueue_many([1], run_at=then)
    await runner.start()
    # The claim commits under the live runner's name, but no worker of it ever
    # sees the reply: a connection that dropped at COMMIT.
    long_ago = timestamp(then)
    store.engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[], queue="default", runner="worker", now=long_ago, max_jobs=1
        )[1]
    )
    try:
        await wait_until(lambda: runner.get(job_id).status is jobtable.Status.SUCCEEDED)
    finally:
        runner.stop()
        await runner.wait()
    assert runner.get(job_id).result == 2
    assert interrupted_warnings(caplog, NEVER_RECEIVED) == [1]


async def test_a_claim_under_way_keeps_its_old_jobs_until_it_ends_without_its_reply(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store, name="worker", lease=0.5, poll_interval=60)
    runner.register("double", double)
    # A queue the runner does not serve: only the claim below takes the job.
    elsewhere = jobtable.Kind("double", int, int, queue="elsewhere")
    job_id = elsewhere.enqueue(store, 1)
    await runner.start()
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=10)
    try:
        # The runner's claim, stamped ten leases ago, commits while it is
        # still under way: the heartbeats before its reply spare its job.
        with runner._completer.claiming(then):
            store.engine.write(
                lambda q: q.finish_and_claim_jobs(
                    outcomes=[], queue="elsewhere", runner="worker", now=timestamp(then), max_jobs=1
                )
            )
            await wait_for_heartbeats(store, "worker", 6, wait_until)
            assert runner.get(job_id).status is jobtable.Status.RUNNING
        # It ended without its reply (a connection dropped at COMMIT): a job
        # no worker has, recovered as a lost claim: queued again, its attempt unused.
        await wait_until(lambda: runner.get(job_id).status is jobtable.Status.QUEUED)
    finally:
        runner.stop()
        await runner.wait()
    record = store.inspect(job_id)
    assert (record.attempt, record.max_attempts, record.errors) == (1, 2, [])


async def test_a_held_job_that_runs_longer_than_the_lease_is_not_failed(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    runner = jobtable.Runner(store, name="worker", lease=0.3)

    async def slow(ctx: jobtable.JobContext[int], payload: int) -> int:
        await asyncio.sleep(1.5)  # five leases without a publish: updated_at goes stale
        return payload

    kind = runner.register("slow", slow)
    job_id = kind.enqueue(7)
    await runner.start()
    try:
        await wait_until(lambda: runner.get(job_id).status is not jobtable.Status.QUEUED)
        await wait_until(lambda: runner.get(job_id).status is not jobtable.Status.RUNNING)
    finally:
        runner.stop()
        await runner.wait()
    job = runner.get(job_id)
    assert (job.status, job.result, job.error) == (jobtable.Status.SUCCEEDED, 7, None)


async def test_claim_retries_wait_as_the_runners_retry_backoff_says(
    store: jobtable.Store,
    store_target: str,
    wait_until: WaitUntil,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    backoff = jobtable.WriteBackoff(0.01, 0.04)
    runner = jobtable.Runner(store, workers=1, poll_interval=60, retry_backoff=backoff)
    runner.register("number", double)
    await runner.start()
    try:
        with writes_failing(store, store_target):
            runner.notify_enqueued()
            await wait_until(lambda: len(claim_retries(caplog)) >= 5)
    finally:
        runner.stop()
        await runner.wait()
    waits = [r.__dict__["backoff"] for r in claim_retries(caplog)[:5]]
    assert waits == [0.01, 0.02, 0.04, 0.04, 0.04]


async def test_a_stopping_runner_gives_up_an_outcome_write_after_give_up_after_tries(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The refusal is transient, as an outage's is: another connection holds the write lock."""
    caplog.set_level(logging.DEBUG, logger="jobtable")
    path = tmp_path / "jobs.db"
    with jobtable.Store.open(path, busy_timeout=0.01) as store:
        runner = jobtable.Runner(
            store, workers=1, give_up_after=3, retry_backoff=jobtable.WriteBackoff(0.01, 0.01)
        )
        running = asyncio.Event()

        async def wait_for_stop(ctx: jobtable.JobContext[int], payload: int) -> int:
            running.set()
            await ctx.asleep(60)
            return payload

        job_id = runner.register("wait", wait_for_stop).enqueue(1)
        await runner.start()
        await asyncio.wait_for(running.wait(), 30)
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as lock:
            lock.execute("BEGIN IMMEDIATE")
            runner.stop()
            await runner.wait()
            lock.execute("ROLLBACK")
        assert runner.get(job_id).status is jobtable.Status.RUNNING
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("record job outcomes; retrying") == 2
    assert sum(m.startswith("record job outcomes; giving up") for m in messages) == 1
