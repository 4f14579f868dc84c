"""Operations that meet a concurrent change of their job act on one state of it.

Each test forces one interleaving: another session holds the job's row
(``SELECT ... FOR UPDATE`` on PostgreSQL, the write lock on SQLite), the
operation starts in a thread and waits behind it, and the holder then
commits a change of the job (a snooze, a retry, a claim, an outcome, an
operator's action) written by the library's own operation. The operation
must then act on the job as the change left it, never answer from one state
and act on another. Two operations take no row lock and so do not wait:
a prune skips a row another transaction holds, and a unique enqueue waits
only for a write in progress to the key's holder (so there the holder writes
its change before the enqueue starts).

Each test runs on both engines. On SQLite the single writer makes them pass
trivially (the operation cannot start before the holder commits); they are
kept as conformance. On PostgreSQL each statement of a READ COMMITTED
transaction takes its own snapshot, which is where an operation of several
statements could see two states of one job.
"""

import asyncio
import concurrent.futures
import datetime
import pathlib
import sqlite3
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from seam import claim_rows, engine_of, now

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.rows import ClaimedRow
from jobtable._operations import CancelJob
from jobtable._operator.admin import DeleteJob, RetryJob
from jobtable._runner.run_operations import Finish, FinishAndClaim, Publish

T = TypeVar("T")
S = jobtable.Status
Cancel = jobtable.CancelResult
WaitUntil = Callable[..., Awaitable[None]]

LIMIT = 20.0
"""Seconds a test waits for a blocked operation; only a broken engine reaches it."""

ping = jobtable.Kind("ping", int, int)


class Holder:
    """Another session that holds a job's row while an operation waits behind it.

    ``hold`` takes the row (PostgreSQL) or the write lock (SQLite);
    ``change`` runs a library operation in the holder's open transaction;
    ``wait_for`` returns once the operation in flight waits for the holder
    (or has already returned); ``commit`` ends the transaction.
    """

    def __init__(self, store: jobtable.Store, engine: str, target: str) -> None:
        self.store = store
        self.engine = engine
        self.target = target
        self.conn: Any = None
        self.watch: Any = None

    def hold(self, job_id: str) -> None:
        if self.engine == "postgres":
            import psycopg

            self.conn = psycopg.connect(self.target)
            self.watch = psycopg.connect(self.target, autocommit=True)
            row = self.conn.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (job_id,))
            assert row.fetchone() is not None
        else:
            self.conn = sqlite3.connect(pathlib.Path(self.target), isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")

    def change(self, op: Callable[[Queries], T]) -> T:
        return engine_of(self.store).write_in(self.conn, op, "the holder")

    def wait_for(self, future: concurrent.futures.Future[Any]) -> None:
        """Returns once the operation of future waits for the holder's row, or has returned.

        SQLite cannot show a waiter, and needs no wait: until the holder
        commits, no other write can begin.
        """
        if self.engine != "postgres":
            return
        deadline = time.monotonic() + LIMIT
        pid = self.conn.info.backend_pid
        while not future.done():
            blocked = self.watch.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks"
                " WHERE NOT granted AND %s = ANY(pg_blocking_pids(pid)))",
                (pid,),
            ).fetchone()[0]
            if blocked:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"the operation neither returned nor waited for {LIMIT} s")
            time.sleep(0.005)

    def commit(self) -> None:
        if self.engine == "postgres":
            self.conn.commit()
        else:
            self.conn.execute("COMMIT")

    def close(self) -> None:
        for conn in (self.conn, self.watch):
            if conn is not None:
                conn.close()


@pytest.fixture
def holder(store: jobtable.Store, engine: str, store_target: str) -> Iterator[Holder]:
    held = Holder(store, engine, store_target)
    yield held
    held.close()


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(1) as threads:
        yield threads


def interleave(
    holder: Holder,
    pool: concurrent.futures.ThreadPoolExecutor,
    job_id: str,
    change: Callable[[Queries], object],
    operation: Callable[[], T],
    *,
    change_first: bool = False,
) -> T:
    """Runs operation while holder holds job_id's row, commits change meanwhile; its result.

    The holder writes change once operation waits for it, or, with
    change_first, before operation starts (for an operation that waits only
    for a write in progress, not for a row lock).
    """
    holder.hold(job_id)
    if change_first:
        holder.change(change)
    future = pool.submit(operation)
    holder.wait_for(future)
    if not change_first:
        holder.change(change)
    holder.commit()
    return future.result(timeout=LIMIT)


def running_job(store: jobtable.Store, **options: Any) -> ClaimedRow:
    """Enqueues a ping job and claims it; its claimed row."""
    ping.enqueue(store, 1, **options)
    (row,) = engine_of(store).write(lambda q: claim_rows(q, 1))
    return row


def ends(row: ClaimedRow, finish: Callable[[ClaimedRow], Finish]) -> FinishAndClaim:
    """The completer's write of how row's attempt ended, claiming nothing."""
    return FinishAndClaim([finish(row)], "r", "default", 0, now())


def snoozed(row: ClaimedRow) -> Finish:
    return Finish.snoozed(row, now())


def retried(row: ClaimedRow) -> Finish:
    return Finish.failed(row, "internal error", retry_at=now())


def failed(row: ClaimedRow) -> Finish:
    return Finish.failed(row, "internal error")


def succeeded(row: ClaimedRow) -> Finish:
    return Finish.succeeded(row, "1")


def claim_one(q: Queries) -> object:
    return claim_rows(q, 1)


# Cancel.


@pytest.mark.parametrize("finish", [snoozed, retried], ids=["snooze", "retry"])
def test_a_cancel_that_meets_the_end_of_an_attempt_cancels_the_job_it_put_back(
    store: jobtable.Store,
    holder: Holder,
    pool: concurrent.futures.ThreadPoolExecutor,
    finish: Callable[[ClaimedRow], Finish],
) -> None:
    row = running_job(store, max_attempts=3)
    answer = interleave(holder, pool, row.id, ends(row, finish), lambda: store.cancel(row.id))
    assert answer is Cancel.CANCELLED
    assert store.get(row.id).status is S.CANCELLED


def test_a_cancel_that_meets_a_claim_asks_the_runner_to_cancel(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    job_id = ping.enqueue(store, 1)
    answer = interleave(holder, pool, job_id, claim_one, lambda: store.cancel(job_id))
    assert answer is Cancel.REQUESTED
    record = store.inspect(job_id)
    assert (record.status, record.cancel_requested) == (S.RUNNING, True)


def test_a_cancel_that_meets_a_success_says_finished_and_changes_nothing(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store)
    answer = interleave(holder, pool, row.id, ends(row, succeeded), lambda: store.cancel(row.id))
    assert answer is Cancel.FINISHED
    record = store.inspect(row.id)
    assert (record.status, record.cancel_requested) == (S.SUCCEEDED, False)


def test_a_cancel_that_meets_a_delete_raises_job_not_found(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    job_id = ping.enqueue(store, 1)
    store.cancel(job_id)
    with pytest.raises(jobtable.JobNotFound):
        interleave(
            holder, pool, job_id, DeleteJob(job_id, store.now()), lambda: store.cancel(job_id)
        )


# The completer's outcomes against a cancel.


@pytest.mark.parametrize("finish", [snoozed, retried], ids=["snooze", "retry"])
def test_an_attempt_put_back_after_a_cancel_request_ends_the_job_cancelled(
    store: jobtable.Store,
    holder: Holder,
    pool: concurrent.futures.ThreadPoolExecutor,
    finish: Callable[[ClaimedRow], Finish],
) -> None:
    row = running_job(store, max_attempts=3)
    outcome = ends(row, finish)
    finished, _ = interleave(
        holder, pool, row.id, CancelJob(row.id, now()), lambda: engine_of(store).write(outcome)
    )
    assert finished == [row.id]
    assert store.get(row.id).status is S.CANCELLED


def test_a_publish_that_meets_the_end_of_its_attempt_raises_not_running(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store, max_attempts=3)
    publish = Publish(row, "2", now())
    with pytest.raises(jobtable.NotRunning):
        interleave(
            holder, pool, row.id, ends(row, snoozed), lambda: engine_of(store).write(publish)
        )
    assert store.get(row.id).result is None


# The operator's actions.


def test_a_retry_that_meets_the_last_attempt_failing_queues_the_job_again(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store)
    answer = interleave(holder, pool, row.id, ends(row, failed), lambda: store.retry(row.id))
    assert answer is jobtable.RetryResult.RETRIED
    assert store.get(row.id).status is S.QUEUED


def test_a_retry_that_meets_another_retry_says_queued_and_adds_no_attempts(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store)
    engine_of(store).write(ends(row, failed))
    answer = interleave(holder, pool, row.id, RetryJob(row.id, now()), lambda: store.retry(row.id))
    assert answer is jobtable.RetryResult.QUEUED
    record = store.inspect(row.id)
    assert (record.status, record.max_attempts) == (S.QUEUED, 2)


def test_a_bulk_retry_that_meets_a_retry_queues_the_job_once(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store)
    engine_of(store).write(ends(row, failed))
    count = interleave(holder, pool, row.id, RetryJob(row.id, now()), lambda: store.retry_failed())
    assert count == 0
    record = store.inspect(row.id)
    assert (record.status, record.max_attempts) == (S.QUEUED, 2)


def test_a_delete_that_meets_the_end_of_the_attempt_deletes_the_finished_job(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store)
    answer = interleave(holder, pool, row.id, ends(row, succeeded), lambda: store.delete(row.id))
    assert answer is jobtable.DeleteResult.DELETED
    with pytest.raises(jobtable.JobNotFound):
        store.get(row.id)


def test_a_delete_that_meets_a_claim_keeps_the_running_job(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    job_id = ping.enqueue(store, 1)
    answer = interleave(holder, pool, job_id, claim_one, lambda: store.delete(job_id))
    assert answer is jobtable.DeleteResult.RUNNING
    assert store.get(job_id).status is S.RUNNING


def test_a_prune_that_meets_a_retry_keeps_the_job_it_queued(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    row = running_job(store)
    engine_of(store).write(ends(row, failed))
    pruned = interleave(
        holder, pool, row.id, RetryJob(row.id, now()), lambda: store.prune(datetime.timedelta(0))
    )
    assert pruned == 0
    assert store.get(row.id).status is S.QUEUED


# The unique enqueue.


def test_a_unique_enqueue_that_meets_its_holder_finishing_stores_a_new_job(
    store: jobtable.Store, holder: Holder, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    # The insert finds the holder's row being written and waits for that
    # transaction; once it commits, the key is free and the insert stores.
    unique = jobtable.Unique(key="one")
    row = running_job(store, unique=unique)
    result = interleave(
        holder,
        pool,
        row.id,
        ends(row, succeeded),
        lambda: ping.enqueue_result(store, 2, unique=unique),
        change_first=True,
    )
    assert result.duplicate is False
    assert result.id != row.id
    assert store.get(result.id).status is S.QUEUED


def cancelled(store: jobtable.Store, job_id: str) -> Callable[[], bool]:
    return lambda: store.get(job_id).status is S.CANCELLED


# The fault campaign's case, as it happened: no forced interleaving, many tries.

CANCELS = 100


async def test_no_cancel_of_a_job_that_snoozes_for_ever_answers_finished(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    """Each job snoozes until cancelled, so it never finishes on its own: FINISHED is always wrong.

    Each cancel is sent as the handler snoozes, so that it meets the end of
    an attempt; a job a cancel wrongly answered for goes on snoozing, and is
    cancelled again until it stops, so that the next job gets the worker.
    """
    snoozer = jobtable.Kind("snoozer", int, int)
    runner = jobtable.Runner(store, workers=1, poll_interval=0.01, cancel_check=0.05)
    runs: Counter[str] = Counter()
    snoozing = asyncio.Event()

    @runner.handler(snoozer)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        runs[ctx.id] += 1
        if runs[ctx.id] == 2:
            snoozing.set()
        raise jobtable.Retry()

    answers: Counter[Cancel] = Counter()
    await runner.start()
    try:
        for i in range(CANCELS):
            snoozing.clear()
            job_id = await snoozer.aenqueue(store, i)
            await asyncio.wait_for(snoozing.wait(), LIMIT)
            answer = await store.acancel(job_id)
            answers[answer] += 1
            while answer is Cancel.FINISHED and store.get(job_id).status is not S.CANCELLED:
                answer = await store.acancel(job_id)
            await wait_until(cancelled(store, job_id), limit=LIMIT)
    finally:
        runner.stop()
        await runner.wait()
    assert answers[Cancel.FINISHED] == 0, dict(answers)
