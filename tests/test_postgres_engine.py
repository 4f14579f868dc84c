"""The PostgreSQL engine on a real server: each test has a schema of its own.

Nothing here sleeps to wait: background work is awaited on events with a
generous limit, which only a broken engine reaches.
"""

import asyncio
import pathlib
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from jobtable._engine import Engine, NewJob, Queries, Statement
from jobtable._errors import StoreError
from jobtable._postgres import SCHEMA_VERSION, PostgresEngine
from jobtable._values import now

LIMIT = 10.0
"""Seconds a test waits for background work before it fails."""

WAKE_LIMIT = 1.0
"""Seconds within which an enqueue must wake a listener: idle runners poll
about once a second, so a slower wake-up would be worth nothing."""


@pytest.fixture
def engine(pg_url: str) -> Iterator[PostgresEngine]:
    """An engine on the test's own schema, closed after the test."""
    opened = PostgresEngine.open(pg_url)
    yield opened
    opened.close()


def with_query(url: str, **params: str) -> str:
    """Returns url with params added to its query string."""
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), *params.items()]
    return urlunsplit(parts._replace(query=urlencode(query)))


def with_password(url: str, password: str) -> str:
    """Returns url with password in it (trust auth ignores it)."""
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


def enqueue(engine: Engine, *ids: str) -> None:
    """Enqueues one job per id, each in its own transaction, in the order given."""
    for id in ids:

        def create(q: Queries, id: str = id) -> None:
            q.insert_jobs(kind="k", jobs=[NewJob(id, "{}", now())], now=now())

        engine.write(create)


def claim(engine: Engine, max_jobs: int, runner: str = "r") -> list[str]:
    """Claims up to max_jobs jobs for runner and returns their ids, oldest first."""
    rows = engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[], queue="default", runner=runner, now=now(), max_jobs=max_jobs
        )[1]
    )
    return [row.id for row in sorted(rows, key=lambda row: row.seq)]


def scalar(url: str, query: sql.SQL | sql.Composed) -> object:
    """Runs query on a connection of its own and returns the first column of its row."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def wait_until(check: Callable[[], bool]) -> None:
    """Waits until check() is true; fails the test after LIMIT seconds."""
    deadline = time.monotonic() + LIMIT
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {LIMIT} s waiting for {check}")
        time.sleep(0.01)


def backends(url: str, application_name: str, query: str = "%") -> int:
    """Counts the server's connections of application_name whose last query is like query."""
    count = scalar(
        url,
        sql.SQL(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = {} AND query LIKE {}"
        ).format(sql.Literal(application_name), sql.Literal(query)),
    )
    assert isinstance(count, int)
    return count


def listeners(url: str, application_name: str) -> int:
    """Counts the listening connections of application_name."""
    return backends(url, application_name, "%jobtable_listen()%")


def test_open_creates_the_schema_and_records_its_version(
    engine: PostgresEngine, pg_url: str
) -> None:
    assert scalar(pg_url, sql.SQL("SELECT version FROM jobtable_schema")) == SCHEMA_VERSION


def test_concurrent_first_opens_apply_the_schema_once(pg_url: str) -> None:
    start = threading.Barrier(4)
    outcomes: list[BaseException | PostgresEngine] = []

    def open_engine() -> None:
        start.wait(LIMIT)
        try:
            outcomes.append(PostgresEngine.open(pg_url))
        except BaseException as err:
            outcomes.append(err)

    threads = [threading.Thread(target=open_engine) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT)
    engines = [o for o in outcomes if isinstance(o, PostgresEngine)]
    for opened in engines:
        opened.close()
    assert len(engines) == 4, outcomes
    assert scalar(pg_url, sql.SQL("SELECT count(*) FROM jobtable_schema")) == 1


def test_reopen_keeps_the_jobs(pg_url: str) -> None:
    first = PostgresEngine.open(pg_url)
    enqueue(first, "a")
    first.close()
    second = PostgresEngine.open(pg_url)
    try:
        job = second.read(lambda q: q.get_job(id="a"))
        assert job is not None
        assert job.status == "queued"
    finally:
        second.close()


def test_newer_schema_version_is_refused_and_left_unchanged(pg_url: str) -> None:
    first = PostgresEngine.open(pg_url)
    enqueue(first, "a")
    first.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE jobtable_schema SET version = %s", (SCHEMA_VERSION + 1,))

    with pytest.raises(StoreError, match="newer than this jobtable"):
        PostgresEngine.open(pg_url)

    assert scalar(pg_url, sql.SQL("SELECT version FROM jobtable_schema")) == SCHEMA_VERSION + 1
    assert scalar(pg_url, sql.SQL("SELECT string_agg(id, ',') FROM jobs")) == "a"


def test_claim_takes_the_oldest_jobs_first(engine: PostgresEngine) -> None:
    enqueue(engine, "c", "a", "b")
    assert claim(engine, 2) == ["c", "a"]
    assert claim(engine, 2) == ["b"]
    assert claim(engine, 2) == []


def test_claim_marks_jobs_running_for_the_runner_with_a_new_attempt(
    engine: PostgresEngine,
) -> None:
    enqueue(engine, "a")
    rows = engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[], queue="default", runner="r1", now=now(), max_jobs=1
        )[1]
    )
    assert [(row.id, row.kind, row.payload, row.attempt) for row in rows] == [("a", "k", "{}", 1)]
    job = engine.read(lambda q: q.get_job(id="a"))
    assert job is not None
    assert job.status == "running"


def test_concurrent_claims_never_give_a_job_twice(pg_url: str) -> None:
    engine = PostgresEngine.open(pg_url, max_connections=8)
    try:
        ids = [f"job{n:03}" for n in range(200)]

        def create_all(q: Queries) -> None:
            for id in ids:
                q.insert_jobs(kind="k", jobs=[NewJob(id, "{}", now())], now=now())

        engine.write(create_all)
        start = threading.Barrier(8)
        claimed: list[list[str]] = [[] for _ in range(8)]

        def work(mine: list[str]) -> None:
            start.wait(LIMIT)
            while batch := claim(engine, 3):
                mine.extend(batch)

        threads = [threading.Thread(target=work, args=(mine,)) for mine in claimed]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LIMIT)
        every = [id for mine in claimed for id in mine]
        assert sorted(every) == ids
    finally:
        engine.close()


def test_claim_skips_jobs_another_claim_holds(engine: PostgresEngine) -> None:
    enqueue(engine, "a", "b")
    held = threading.Event()
    release = threading.Event()
    first: list[str] = []

    def hold(q: Queries) -> None:
        first.extend(
            row.id
            for row in q.finish_and_claim_jobs(
                outcomes=[], queue="default", runner="r1", now=now(), max_jobs=1
            )[1]
        )
        held.set()
        release.wait(LIMIT)

    holder = threading.Thread(target=engine.write, args=(hold,))
    holder.start()
    try:
        assert held.wait(LIMIT)
        assert claim(engine, 2, runner="r2") == ["b"]
    finally:
        release.set()
        holder.join(LIMIT)
    assert first == ["a"]


def test_writes_of_a_stale_attempt_change_nothing(engine: PostgresEngine) -> None:
    enqueue(engine, "a")
    claim(engine, 1)
    stale = 0

    def write_stale(q: Queries) -> list[int]:
        return [
            q.publish_job_result(result='"stale"', now=now(), id="a", attempt=stale),
            q.succeed_job(result='"stale"', now=now(), id="a", attempt=stale),
            q.fail_job(error="stale", now=now(), id="a", attempt=stale),
        ]

    assert engine.write(write_stale) == [0, 0, 0]
    job = engine.read(lambda q: q.get_job(id="a"))
    assert job is not None
    assert (job.status, job.result, job.error) == ("running", None, None)


def test_writes_of_the_current_attempt_are_stored(engine: PostgresEngine) -> None:
    enqueue(engine, "a")
    claim(engine, 1)
    published = engine.write(
        lambda q: q.publish_job_result(result='{"done": 1}', now=now(), id="a", attempt=1)
    )
    partial = engine.read(lambda q: q.get_job(id="a"))
    succeeded = engine.write(lambda q: q.succeed_job(result="[2]", now=now(), id="a", attempt=1))
    final = engine.read(lambda q: q.get_job(id="a"))
    assert (published, succeeded) == (1, 1)
    assert partial is not None
    assert (partial.status, partial.result) == ("running", '{"done": 1}')
    assert final is not None
    assert (final.status, final.result, final.error) == ("succeeded", "[2]", None)


def test_times_round_trip_as_utc_text(engine: PostgresEngine) -> None:
    moment = "2024-02-29T23:59:58.123456Z"
    engine.write(lambda q: q.insert_jobs(kind="k", jobs=[NewJob("a", "{}", moment)], now=moment))
    record = engine.read(lambda q: q.get_job_record(id="a"))
    assert record is not None
    assert (record.run_at, record.created_at) == (moment, moment)


def test_heartbeats_are_the_servers_time_not_the_runners(engine: PostgresEngine) -> None:
    # A runner whose clock is a year behind still registers as alive: the
    # lease is measured on the server's clock alone.
    skewed = "2024-02-29T23:59:58.123456Z"
    engine.write(lambda q: q.register_runner(name="r", now=skewed))
    runner = engine.read(lambda q: q.get_runner(name="r", now=skewed, lease=30.0))
    assert runner is not None
    assert runner.heartbeat_at != skewed
    assert runner.alive


def test_an_exception_from_the_op_rolls_back_and_reaches_the_caller(
    engine: PostgresEngine,
) -> None:
    def enqueue_then_raise(q: Queries) -> None:
        q.insert_jobs(kind="k", jobs=[NewJob("a", "{}", now())], now=now())
        raise LookupError("op failed")

    with pytest.raises(LookupError, match="op failed"):
        engine.write(enqueue_then_raise)
    assert engine.read(lambda q: q.get_job(id="a")) is None


async def test_async_fronts_run_the_same_operations(engine: PostgresEngine) -> None:
    await engine.awrite(
        lambda q: q.insert_jobs(kind="k", jobs=[NewJob("a", "{}", now())], now=now())
    )
    job = await engine.aread(lambda q: q.get_job(id="a"))
    assert job is not None
    assert job.status == "queued"


async def test_async_fronts_do_not_block_the_event_loop(engine: PostgresEngine) -> None:
    held = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    def hold(_: Queries) -> None:
        loop.call_soon_threadsafe(held.set)
        release.wait(LIMIT)

    write = asyncio.create_task(engine.awrite(hold))
    try:
        await asyncio.wait_for(held.wait(), LIMIT)
    finally:
        release.set()
    await write


def test_listen_wakes_when_another_connection_enqueues(engine: PostgresEngine, pg_url: str) -> None:
    woken = threading.Event()
    stop = engine.listen(woken.set)
    other = PostgresEngine.open(pg_url)
    try:
        enqueue(other, "a")
        assert woken.wait(WAKE_LIMIT)
    finally:
        other.close()
        stop()


def test_listen_hears_only_its_own_schema(
    engine: PostgresEngine, new_pg_url: Callable[[], str]
) -> None:
    wakes: list[None] = []
    woken = threading.Event()

    def wake() -> None:
        wakes.append(None)
        woken.set()

    stop = engine.listen(wake)
    other = PostgresEngine.open(new_pg_url())
    try:
        # Committed first, so had it been heard it would have come first.
        enqueue(other, "elsewhere")
        enqueue(engine, "here")
        assert woken.wait(LIMIT)
        assert len(wakes) == 1
    finally:
        other.close()
        stop()


def test_listen_reconnects_after_its_connection_is_terminated(pg_url: str) -> None:
    name = f"jobtable-test-{secrets.token_hex(4)}"
    engine = PostgresEngine.open(with_query(pg_url, application_name=name))
    woken = threading.Event()
    stop = engine.listen(woken.set)
    try:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            terminated = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s AND query LIKE %s",
                (name, "%jobtable_listen()%"),
            ).fetchall()
        assert terminated == [(True,)]
        # Once listening again it wakes for the enqueues it may have missed.
        assert woken.wait(LIMIT)
        woken.clear()
        enqueue(engine, "a")
        assert woken.wait(LIMIT)
    finally:
        stop()
        engine.close()


def test_stop_listening_closes_its_connection(pg_url: str) -> None:
    name = f"jobtable-test-{secrets.token_hex(4)}"
    engine = PostgresEngine.open(with_query(pg_url, application_name=name))
    try:
        stop = engine.listen(lambda: None)
        assert listeners(pg_url, name) == 1
        stop()
        stop()
        wait_until(lambda: listeners(pg_url, name) == 0)
    finally:
        engine.close()


def test_a_stopped_listener_is_not_woken(engine: PostgresEngine) -> None:
    stopped: list[None] = []
    stop = engine.listen(lambda: stopped.append(None))
    woken = threading.Event()
    stop_witness = engine.listen(woken.set)
    try:
        stop()
        enqueue(engine, "a")
        assert woken.wait(LIMIT)
        assert stopped == []
    finally:
        stop_witness()


@pytest.mark.parametrize(("durable", "setting"), [(True, "on"), (False, "off")])
def test_durable_sets_synchronous_commit(pg_url: str, durable: bool, setting: str) -> None:
    engine = PostgresEngine.open(pg_url, durable=durable, max_connections=1)
    try:
        # The only way to see a pooled connection's setting is to borrow one.
        with engine._pool.connection() as conn:
            row = conn.execute("SHOW synchronous_commit").fetchone()
        assert row == (setting,)
    finally:
        engine.close()


def test_an_unreachable_server_raises_store_error(pg_server: str) -> None:
    url = with_query(pg_server.replace(":5432", ":1"), connect_timeout="5")
    with pytest.raises(StoreError, match="open") as raised:
        PostgresEngine.open(url)
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)


def test_a_database_error_raises_store_error(engine: PostgresEngine) -> None:
    enqueue(engine, "a")
    with pytest.raises(StoreError, match="duplicate key") as raised:
        enqueue(engine, "a")
    assert isinstance(raised.value.__cause__, psycopg.errors.UniqueViolation)


def test_a_connection_lost_in_the_pool_is_replaced_before_the_next_write(
    pg_url: str,
) -> None:
    name = f"jobtable-test-{secrets.token_hex(4)}"
    engine = PostgresEngine.open(with_query(pg_url, application_name=name), max_connections=1)
    try:
        enqueue(engine, "a")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (name,),
            )
        wait_until(lambda: backends(pg_url, name) == 0)
        enqueue(engine, "b")
        assert claim(engine, 3) == ["a", "b"]
    finally:
        engine.close()


def test_a_one_statement_write_sends_its_statement_alone(
    pg_url: str, tmp_path: pathlib.Path
) -> None:
    # libpq's trace of the one pooled connection shows every message sent:
    # a healthy connection leaving the pool is not probed with an empty
    # query, and an op of one statement gets no BEGIN and COMMIT.
    engine = PostgresEngine.open(pg_url, max_connections=1)
    trace = tmp_path / "trace"

    class Claim(Statement[object]):
        def __call__(self, q: Queries) -> object:
            return q.finish_and_claim_jobs(
                outcomes=[], queue="default", runner="r", now=now(), max_jobs=1
            )[1]

    try:
        enqueue(engine, "a")
        with trace.open("w") as out:
            with engine._pool.connection() as conn:
                conn.pgconn.trace(out.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                assert engine.write(Claim())
                enqueue(engine, "b")
            finally:
                with engine._pool.connection() as conn:
                    conn.pgconn.untrace()
        sent = [line.split("\t") for line in trace.read_text().splitlines()]
        # An empty probe would show as the query "": only enqueue's
        # transaction sends queries of its own.
        queries = [fields[-1].strip() for fields in sent if fields[0] == "F" and "Query" in fields]
        assert queries == ['"BEGIN"', '"COMMIT"']
        assert sum(1 for fields in sent if fields[0] == "F" and "Execute" in fields) == 2
    finally:
        engine.close()


def test_a_closed_engine_raises_store_error(pg_url: str) -> None:
    engine = PostgresEngine.open(pg_url)
    engine.close()
    engine.close()
    with pytest.raises(StoreError, match="closed"):
        enqueue(engine, "a")
    with pytest.raises(StoreError, match="closed"):
        engine.listen(lambda: None)


def test_repr_and_errors_never_show_the_password(pg_url: str) -> None:
    engine = PostgresEngine.open(with_password(pg_url, "hunter2"))
    engine.close()
    unreachable = with_password(pg_url.replace(":5432", ":1"), "hunter2")
    with pytest.raises(StoreError) as raised:
        PostgresEngine.open(unreachable)
    assert "hunter2" not in repr(engine)
    assert "hunter2" not in str(raised.value)


def test_postgres_engine_is_an_engine(engine: PostgresEngine) -> None:
    # mypy proves the protocol at this assignment; the assert keeps it used.
    as_engine: Engine = engine
    assert as_engine is engine
