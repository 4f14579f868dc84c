"""The connections a process opens to PostgreSQL: bounded, counted, and refused without harm.

A store keeps at most ``max_connections`` connections for its operations,
plus one per runner that listens and one while anything waits for a job's
end: the PostgreSQL guide's connection budget, counted here in
``pg_stat_activity`` by application_name. A server that refuses new
connections (``too many clients``, a role's connection limit) fails no
job: the runner retries with backoff, logs the episode once, and runs
everything once the server takes connections again; an enqueue meanwhile
raises a transient StoreError that says why, and a wait keeps waiting.
"""

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pg_cluster
import psycopg
import pytest

import jobtable
from jobtable._engines.postgres.engine import PostgresEngine

T = TypeVar("T")
WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

double = jobtable.Kind("double", int, int)
child = jobtable.Kind("child", int, int, queue="children")

REFUSED = ("too many clients", "too many connections for role")
"""What PostgreSQL's refusals of a new connection say (SQLSTATE 53300)."""

SLOTS = 12
"""The max_connections of the cluster whose slots the test fills."""


def with_application_name(url: str, name: str) -> str:
    """url, its connections named name in pg_stat_activity."""
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), ("application_name", name)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def sessions(monitor: psycopg.Connection, name: str) -> tuple[int, int]:
    """The sessions of application_name name: all of them, and those that listen."""
    row = monitor.execute(
        "SELECT count(*), count(*) FILTER (WHERE query ILIKE '%%listen%%') "
        "FROM pg_stat_activity WHERE application_name = %s",
        (name,),
    ).fetchone()
    assert row is not None
    return row[0], row[1]


@contextlib.contextmanager
def sampled(url: str, name: str) -> Iterator[list[tuple[int, int]]]:
    """Samples ``sessions`` of name every few milliseconds while the block runs."""
    found: list[tuple[int, int]] = []
    done = threading.Event()

    def sample() -> None:
        with psycopg.connect(url, autocommit=True) as monitor:
            while not done.wait(0.005):
                found.append(sessions(monitor, name))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        done.set()
        thread.join(30)


async def test_a_runner_with_many_workers_holds_max_connections_and_its_listeners(
    pg_url: str, wait_until: WaitUntil, finished: Finished
) -> None:
    name = f"budget-{secrets.token_hex(4)}"
    store = jobtable.Store.open(with_application_name(pg_url, name), max_connections=3)
    runner = jobtable.Runner(store, workers=8, poll_interval=0.2)

    @runner.handler(double)
    def run(ctx: jobtable.JobContext[int], payload: int) -> int:
        # Every worker calls the store too, as handlers that enqueue do.
        child.enqueue(store, payload)
        return 2 * payload

    try:
        with sampled(pg_url, name) as found:
            await runner.start()
            ids = double.enqueue_many(store, list(range(200)))
            # A wait under way in the process listens on a connection of its own.
            waited = asyncio.to_thread(double.enqueue_and_wait, store, 500, wait_timeout=60)
            assert await waited == 1000
            await wait_until(finished(runner, ids), limit=60)
            runner.stop()
            await runner.wait()
        assert {store.get(job_id).status for job_id in ids} == {jobtable.Status.SUCCEEDED}
    finally:
        store.close()
    most = max(total for total, _ in found)
    listening = max(listens for _, listens in found)
    # max_connections for the operations, one for the runner's listener, one for the wait's.
    assert most <= 3 + 2, found
    assert listening == 2, found


def fill(url: str, held: list[psycopg.Connection], names: tuple[str, ...]) -> None:
    """Takes every connection slot of url's server: the free ones, then those of names' sessions.

    It ends the sessions whose application_name is one of names, and takes
    their slots, until a connection is refused and every client session is
    one of held (a session ended a moment ago holds its slot until its
    process exits): no process of the test can connect until held is closed.
    """
    while True:
        try:
            held.append(psycopg.connect(url, autocommit=True, application_name="filler"))
            continue
        except psycopg.OperationalError as err:
            if not any(text in str(err) for text in REFUSED):
                raise
        row = (
            held[0]
            .execute(
                "SELECT count(*) FILTER (WHERE application_name <> 'filler'),"
                " count(pg_terminate_backend(pid)) FILTER (WHERE application_name = ANY(%s))"
                " FROM pg_stat_activity WHERE backend_type = 'client backend'",
                (list(names),),
            )
            .fetchone()
        )
        if row is not None and row[0] == 0:
            return
        time.sleep(0.01)


def statuses(conn: psycopg.Connection) -> dict[str, int]:
    """How many jobs the store in conn's database has in each status."""
    rows = conn.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
    return dict(rows)


def refusals(cluster: pg_cluster.Cluster) -> int:
    """How many connections the cluster refused for want of a slot, so far."""
    log = cluster.server_log()
    return sum(log.count(text) for text in REFUSED)


@pytest.mark.slow
@pytest.mark.parametrize("throwaway_pg", [SLOTS], indirect=True)
async def test_a_runner_fails_no_job_while_the_server_refuses_connections(
    throwaway_pg: pg_cluster.Cluster,
    wait_until: WaitUntil,
    finished: Finished,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="jobtable")
    url = throwaway_pg.url
    store = jobtable.Store.open(with_application_name(url, "budget-runner"))
    waiting = jobtable.Store.open(with_application_name(url, "budget-waiter"))
    runner = jobtable.Runner(store, workers=4, poll_interval=0.2, cancel_check=0.2)
    gate = threading.Event()

    @runner.handler(double)
    def run(ctx: jobtable.JobContext[int], payload: int) -> int:
        gate.wait(60)
        return 2 * payload

    held: list[psycopg.Connection] = []
    try:
        ids = double.enqueue_many(store, list(range(20)))
        await runner.start()
        await wait_until(lambda: runner.get(ids[3]).status is jobtable.Status.RUNNING)
        wait = asyncio.ensure_future(asyncio.to_thread(double.wait, waiting, ids[-1], timeout=120))
        with psycopg.connect(url, autocommit=True) as monitor:
            await wait_until(lambda: sessions(monitor, "budget-waiter")[1] == 1)
        # Four jobs run, sixteen wait, and so does a wait. The server is full
        # from now on, and the runner's connections, idle while its handlers
        # block, and the wait's are gone.
        fill(url, held, ("budget-runner", "budget-waiter"))
        before = refusals(throwaway_pg)
        mark = len(caplog.records)
        for refused_call in (
            lambda: double.enqueue(waiting, 99),
            lambda: double.wait(waiting, ids[-1], timeout=120),
        ):
            with pytest.raises(jobtable.StoreError, match="too many clients") as refused:
                refused_call()
            assert refused.value.transient
        gate.set()
        # The outcomes of the four, the claims and the heartbeats are refused
        # again and again, and the jobs stay as they were.
        await wait_until(lambda: refusals(throwaway_pg) >= before + 10, limit=60)
        assert statuses(held[0]) == {"running": 4, "queued": 16}
    finally:
        for conn in held:
            conn.close()
    try:
        await wait_until(finished(runner, ids), limit=60)
        assert await wait == 2 * 19
        records = [store.inspect(job_id) for job_id in ids]
        assert [(r.status, r.attempt, r.result) for r in records] == [
            (jobtable.Status.SUCCEEDED, 1, 2 * n) for n in range(20)
        ]
    finally:
        runner.stop()
        await runner.wait()
        waiting.close()
        store.close()
    # Each retry was logged, but only the first of the outage as a warning:
    # by the runner's services, its listener, the wait.
    tries = [r for r in caplog.records[mark:] if r.exc_info or "retrying" in r.getMessage()]
    assert len(tries) >= 5
    for logger in ("jobtable", "jobtable.postgres", "jobtable.wait"):
        warned = [r for r in tries if r.name == logger and r.levelno >= logging.WARNING]
        assert len(warned) <= 1, [r.getMessage() for r in warned]
    assert any("answers again" in r.getMessage() for r in caplog.records[mark:])


@pytest.mark.slow
def test_a_roles_connection_limit_is_a_transient_error_that_says_so(
    throwaway_pg: pg_cluster.Cluster,
) -> None:
    with psycopg.connect(throwaway_pg.url, autocommit=True) as admin:
        admin.execute("CREATE ROLE limited LOGIN CONNECTION LIMIT 1")
        admin.execute("CREATE SCHEMA limited AUTHORIZATION limited")
    url = throwaway_pg.url.replace("postgres@", "limited@")
    with jobtable.Store.open(url) as store:
        # A connection just closed holds the role's slot until its process exits.
        with eventually(lambda: psycopg.connect(url)):
            with pytest.raises(jobtable.StoreError, match="too many connections for role") as err:
                double.enqueue(store, 1)
            assert err.value.transient
        job_id = eventually(lambda: double.enqueue(store, 2))
        assert store.get(job_id).status is jobtable.Status.QUEUED


def eventually(call: Callable[[], T]) -> T:
    """What call returns once it stops raising a refusal of a connection (within 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return call()
        except (psycopg.OperationalError, jobtable.StoreError) as err:
            if time.monotonic() > deadline or not any(text in str(err) for text in REFUSED):
                raise
        time.sleep(0.05)


def test_the_stores_connections_are_named_jobtable_unless_the_url_names_them(
    pg_url: str,
) -> None:
    named = with_application_name(pg_url, f"named-{secrets.token_hex(4)}")
    for url, name in ((pg_url, "jobtable"), (named, named.rsplit("=", 1)[1])):
        with jobtable.Store.open(url) as store:
            engine = store.engine
            assert isinstance(engine, PostgresEngine)
            # The pool's own connection: other processes' on the server may be named jobtable.
            with engine._pool.connection() as conn:
                assert conn.info.parameter_status("application_name") == name
