"""jobtable through a real PgBouncer in transaction mode (the ``pgbouncer`` fixture).

A pooled store prepares no statement on the server and leaves no setting on
a session, so PgBouncer may hand its server connections to other clients:
two stores and two processes share them. Wake-ups listen on the direct URL
(``listen_url``); without it runners and waits poll. Every test starts
PgBouncer (slow).
"""

import asyncio
import logging
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pgbouncer_server
import pytest
from pgbouncer_server import PooledURLs

import jobtable
from jobtable.testing import drain

pytestmark = pytest.mark.slow

TRIAL = pathlib.Path(__file__).with_name("pgbouncer_trial")
"""The trial's two scripts: worker.py (a runner) and waiter.py (enqueues and waits)."""
ROUNDS = 50
"""Round trips the cross-process test makes in each wake-up mode."""

double = jobtable.Kind("double", int, int)
limited = jobtable.Kind("limited", int, int, queue="limited")
WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


@pytest.fixture
def pooled_store(pooled_pg: PooledURLs) -> Iterator[jobtable.Store]:
    """A store through PgBouncer that listens on the direct URL; closed after the test."""
    opened = jobtable.Store.open(pooled_pg.pooled, pooled=True, listen_url=pooled_pg.direct)
    yield opened
    opened.close()


def doubling_runner(store: jobtable.Store, *kinds: jobtable.Kind[int, int]) -> jobtable.Runner:
    """A runner of store whose handler of each kind doubles its payload."""
    queues = {kind.options.queue: 4 for kind in kinds}
    runner = jobtable.Runner(store, queues=queues, poll_interval=0.2)
    for kind in kinds:

        @runner.handler(kind)
        def run(ctx: jobtable.JobContext[int], payload: int) -> int:
            return 2 * payload

    return runner


def test_stores_of_many_clients_share_pgbouncers_server_connections(
    pooled_pg: PooledURLs,
) -> None:
    stores = [jobtable.Store.open(pooled_pg.pooled, pooled=True) for _ in range(4)]
    try:
        ids = [double.enqueue(store, n) for n in range(20) for store in stores]
        assert {store.get(job_id).status for store in stores for job_id in ids} == {
            jobtable.Status.QUEUED
        }
    finally:
        for store in stores:
            store.close()


def test_a_pooler_url_opened_without_pooled_is_told_to_add_it(pooled_pg: PooledURLs) -> None:
    # Another client's prepared statements are on the one server connection
    # the pooler shares: psycopg's own, with the same names, clash with them.
    jobtable.Store.open(pooled_pg.direct).close()

    def use_through_the_pooler() -> None:
        with jobtable.Store.open(pooled_pg.pooled, migrate=False) as store:
            for n in range(20):
                double.enqueue(store, n)
                store.stats()

    with pytest.raises(jobtable.StoreError, match="open the store with pooled=True"):
        use_through_the_pooler()


def test_a_pooled_store_without_listen_url_warns_once_of_polling_as_it_would_listen(
    pooled_pg: PooledURLs, caplog: pytest.LogCaptureFixture
) -> None:
    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "listen_url" in r.getMessage()]

    with caplog.at_level(logging.WARNING, logger="jobtable.postgres"):
        store = jobtable.Store.open(pooled_pg.pooled, pooled=True)
        try:
            double.enqueue(store, 1)
            assert warnings() == [], "a process that only enqueues is not warned"
            for _ in range(2):
                stop = store.engine.listen(lambda: None)
                assert stop is not None
                stop()
        finally:
            store.close()
    [warning] = warnings()
    assert "poll_interval" in warning
    assert "1 s" in warning


async def test_a_runner_starts_runs_and_stops_through_pgbouncer(
    pooled_store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = doubling_runner(pooled_store, double)
    await runner.start()
    ids = double.enqueue_many(pooled_store, list(range(30)))
    await wait_until(finished(runner, ids))
    runner.stop()
    await runner.wait()
    assert [pooled_store.get(job_id).result for job_id in ids] == [2 * n for n in range(30)]


async def test_flow_control_holds_through_pgbouncer(pooled_store: jobtable.Store) -> None:
    pooled_store.set_limits("limited", concurrency=1)
    pooled_store.pause("limited")
    ids = limited.enqueue_many(pooled_store, list(range(8)))
    assert pooled_store.inspect(ids[0]).waiting is jobtable.WaitReason.PAUSED
    pooled_store.resume("limited")
    assert pooled_store.inspect(ids[1]).waiting is not jobtable.WaitReason.PAUSED
    records = await drain(doubling_runner(pooled_store, limited))
    assert [(r.id, r.result) for r in records] == [(ids[n], 2 * n) for n in range(8)]


async def test_a_workflow_runs_through_pgbouncer(pooled_store: jobtable.Store) -> None:
    wf = jobtable.Workflow("through-pgbouncer")
    chain = [wf.add(double, 1)]
    for _ in range(7):
        chain.append(wf.add(double, chain[-1], after=[chain[-1]]))
    wf.enqueue(pooled_store)
    records = await drain(doubling_runner(pooled_store, double))
    assert [r.id for r in records] == [node.id for node in chain]
    assert [r.result for r in records] == [2**n for n in range(1, 9)]


@pytest.mark.parametrize("pooled_pg", ["session"], indirect=True)
async def test_a_runner_runs_through_pgbouncer_in_session_mode_listening_through_it(
    pooled_pg: PooledURLs, wait_until: WaitUntil, finished: Finished
) -> None:
    store = jobtable.Store.open(pooled_pg.pooled, pooled=True, listen_url=pooled_pg.pooled)
    try:
        runner = doubling_runner(store, double)
        await runner.start()
        ids = double.enqueue_many(store, list(range(30)))
        await wait_until(finished(runner, ids))
        waited = asyncio.to_thread(double.enqueue_and_wait, store, 21, wait_timeout=30)
        assert await waited == 42
        runner.stop()
        await runner.wait()
    finally:
        store.close()


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test started; killed at the end if still running."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    ("pooled_pg", "listen"),
    [
        ("transaction", "direct"),
        ("transaction", "polling"),
        # Session mode carries LISTEN: the pooled URL listens too.
        ("session", "pooled"),
    ],
    indirect=["pooled_pg"],
)
async def test_round_trips_between_a_worker_and_a_waiter_process(
    pooled_pg: PooledURLs,
    listen: str,
    processes: list[subprocess.Popen[bytes]],
    pgbouncer: pgbouncer_server.Bouncer,
) -> None:
    """The done-when trial: 50 cross-process enqueue-and-wait round trips, every result right."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTABLE_")}
    env |= {"JOBTABLE_STORE": pooled_pg.pooled, "JOBTABLE_POOLED": "1"}
    if listen != "polling":
        env["JOBTABLE_LISTEN_URL"] = pooled_pg.direct if listen == "direct" else pooled_pg.pooled

    def start(script: str, *args: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, str(TRIAL / script), *args]
        processes.append(subprocess.Popen(argv, env=env, start_new_session=True))
        return processes[-1]

    logged = len(pgbouncer.server_log())
    worker = start("worker.py")
    waiter = start("waiter.py", str(ROUNDS))
    try:
        code = await asyncio.to_thread(waiter.wait, 300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the waiter did not finish {ROUNDS} round trips within 300 s")
    assert code == 0, "the waiter's round trips failed (see its output)"
    assert worker.poll() is None, "the worker died"
    worker.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(worker.wait, 60) == 0
    # Nothing listened through PgBouncer in transaction mode (a LISTEN left on
    # a pooled server connection makes it log "got packet 'A' from server
    # when not linked"), and no statement clashed with another client's.
    log = pgbouncer.server_log()[logged:]
    assert "not linked" not in log
    assert "already exists" not in log
