"""Enqueue in the application's own transaction: a job exists if and only if it commits.

Each test runs once per kind of application connection (``transaction_ways``):
sqlite3 and SQLAlchemy's Connection and Session on SQLite; psycopg, its
async connection, and SQLAlchemy's Connection, Session and their async
twins on PostgreSQL.
"""

import pathlib
from collections.abc import Awaitable, Callable, Iterator

import pytest
from transaction_ways import WAY_PARAMS, Way

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

email = jobtable.Kind("email", int, int)


@pytest.fixture(params=WAY_PARAMS)
def way(request: pytest.FixtureRequest) -> Way:
    """One kind of application connection."""
    chosen: Way = request.param
    return chosen


@pytest.fixture
def target(way: Way, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> str:
    """The store's target on the way's engine."""
    if way.engine == "sqlite":
        return str(tmp_path / "jobs.db")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def store(target: str) -> Iterator[jobtable.Store]:
    """A fresh store on the way's engine, closed after the test."""
    with jobtable.Store.open(target) as opened:
        yield opened


def absent(store: jobtable.Store, job_id: str) -> bool:
    try:
        store.get(job_id)
    except jobtable.JobNotFound:
        return True
    return False


async def test_a_job_enqueued_in_a_transaction_exists_once_it_commits(
    way: Way, store: jobtable.Store, target: str
) -> None:
    async with way.transaction(target) as tx:
        job_id = await way.enqueue(email, store, 1, conn=tx.conn)
        assert absent(store, job_id), "visible to the store before the commit"
        await tx.commit()
    assert store.get(job_id).status is jobtable.Status.QUEUED
    assert store.inspect(job_id).payload == 1


async def test_a_job_enqueued_in_a_transaction_that_rolls_back_never_exists(
    way: Way, store: jobtable.Store, target: str
) -> None:
    async with way.transaction(target) as tx:
        job_id = await way.enqueue(email, store, 1, conn=tx.conn)
        ids = await way.enqueue_many(email, store, [2, 3], tx.conn)
        await tx.rollback()
    for gone in [job_id, *ids]:
        assert absent(store, gone)
    assert store.counts() == {}


async def test_an_exception_inside_the_block_leaves_no_job(
    way: Way, store: jobtable.Store, target: str
) -> None:
    ids: list[str] = []

    async def handle_request() -> None:
        async with way.block(target) as conn:
            ids.extend(await way.enqueue_many(email, store, [1, 2], conn))
            ids.append(await way.enqueue(email, store, 3, conn=conn))
            raise RuntimeError("the application failed")

    with pytest.raises(RuntimeError, match="the application failed"):
        await handle_request()
    assert len(ids) == 3
    assert all(absent(store, job_id) for job_id in ids)
    assert store.counts() == {}


async def test_jobs_enqueued_in_a_block_that_ends_exist_together(
    way: Way, store: jobtable.Store, target: str
) -> None:
    async with way.block(target) as conn:
        ids = await way.enqueue_many(email, store, [1, 2, 3], conn)
        ids.append(await way.enqueue(email, store, 4, conn=conn, priority=5))
    assert [store.inspect(i).payload for i in ids] == [1, 2, 3, 4]
    assert store.inspect(ids[-1]).priority == 5


async def test_an_idle_runner_of_the_same_store_runs_the_job_once_it_commits(
    way: Way, store: jobtable.Store, target: str, wait_until: WaitUntil, finished: Finished
) -> None:
    """The runner's poll is an hour apart: only the commit's wake can start the job in time."""
    runner = jobtable.Runner(store, workers=1, poll_interval=3600)

    @runner.handler(email)
    async def send(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload * 10

    first = email.enqueue(store, 0)
    await runner.start()
    try:
        await wait_until(finished(runner, [first]))  # the runner is idle from here on
        async with way.transaction(target) as tx:
            job_id = await way.enqueue(email, store, 4, conn=tx.conn)
            await tx.commit()
        await wait_until(finished(runner, [job_id]))
    finally:
        runner.stop()
        await runner.wait()
    assert email.get(store, job_id).result == 40


account_sync = jobtable.Kind("account_sync", int, int, unique=jobtable.Unique(key="account-1"))


async def test_a_unique_collision_inside_the_transaction_returns_the_first_job(
    way: Way, store: jobtable.Store, target: str
) -> None:
    async with way.transaction(target) as tx:
        first = await way.enqueue_result(account_sync, store, 1, conn=tx.conn)
        second = await way.enqueue_result(account_sync, store, 2, conn=tx.conn)
        await tx.commit()
    assert (first.duplicate, second) == (False, jobtable.EnqueueResult(first.id, True))
    assert store.counts() == {"default": {jobtable.Status.QUEUED: 1}}
    assert store.inspect(first.id).payload == 1


async def test_a_unique_collision_with_a_committed_job_inside_the_transaction(
    way: Way, store: jobtable.Store, target: str
) -> None:
    holder = account_sync.enqueue(store, 1)
    async with way.transaction(target) as tx:
        result = await way.enqueue_result(account_sync, store, 2, conn=tx.conn)
        await tx.rollback()
    assert result == jobtable.EnqueueResult(holder, True)
    assert store.counts() == {"default": {jobtable.Status.QUEUED: 1}}


async def test_a_rolled_back_unique_job_leaves_its_key_free(
    way: Way, store: jobtable.Store, target: str
) -> None:
    async with way.transaction(target) as tx:
        taken = await way.enqueue_result(account_sync, store, 1, conn=tx.conn)
        await tx.rollback()
    later = account_sync.enqueue_result(store, 2)
    assert later.duplicate is False
    assert later.id != taken.id
    assert store.inspect(later.id).payload == 2
