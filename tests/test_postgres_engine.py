"""What only the PostgreSQL engine does, on a real server: each test has a schema of its own.

What every engine does is in the conformance suite (conformance/): this file holds
PostgreSQL's own claims under concurrency (SKIP LOCKED), LISTEN/NOTIFY, its
pool and its connection settings.

Nothing here sleeps to wait: background work is awaited on events with a
generous limit, which only a broken engine reaches.
"""

import logging
import pathlib
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from seam import claim, claim_rows, create, enqueue, now

from jobtable._engines.base import Engine, Queries, Statement
from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._engines.postgres.pool import Pool
from jobtable._engines.rows import NewJob
from jobtable._errors import StoreError
from jobtable._operations import create_jobs

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


def with_port(url: str, port: int) -> str:
    """Returns url with its port set to port (1: nothing listens there)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition(":")[0] if parts.port is not None else parts.netloc
    return urlunsplit(parts._replace(netloc=f"{host}:{port}"))


def with_password(url: str, password: str) -> str:
    """Returns url with password in it (trust auth ignores it)."""
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


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


def test_claim_skips_jobs_another_claim_holds(engine: PostgresEngine) -> None:
    enqueue(engine, "a", "b")
    held = threading.Event()
    release = threading.Event()
    first: list[str] = []

    def hold(q: Queries) -> None:
        first.extend(row.id for row in claim_rows(q, 1, "r1"))
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


def test_heartbeats_are_the_servers_time_not_the_runners(engine: PostgresEngine) -> None:
    # A runner whose clock is a year behind still registers as alive: the
    # lease is measured on the server's clock alone.
    skewed = "2024-02-29T23:59:58.123456Z"
    engine.write(lambda q: q.register_runner(name="r", now=skewed, host=None, process=None))
    runner = engine.read(lambda q: q.get_runner(name="r", now=skewed, lease=30.0))
    assert runner is not None
    assert runner.heartbeat_at != skewed
    assert runner.alive


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


def test_a_transaction_left_idle_past_the_idle_timeout_ends_and_frees_its_locks(
    pg_url: str,
) -> None:
    # The op stalls inside its transaction, holding the row its claim
    # locked, as a stopped process would: the server ends the session, the
    # lock is freed while the op still stalls, and the op's next statement
    # fails as a lost connection does, transient, its claim rolled back.
    engine = PostgresEngine.open(pg_url, idle_timeout=0.2)
    witness = psycopg.connect(pg_url, autocommit=True)

    def free() -> bool:
        try:
            with witness.transaction():
                witness.execute("SELECT 1 FROM jobs WHERE id = 'a' FOR UPDATE NOWAIT")
        except psycopg.errors.LockNotAvailable:
            return False
        return True

    def stall(q: Queries) -> object:
        assert [row.id for row in claim_rows(q, 1)] == ["a"]
        assert not free()
        wait_until(free)
        return q.get_job(id="a")

    try:
        enqueue(engine, "a")
        with pytest.raises(StoreError) as ended:
            engine.write(stall)
        assert ended.value.transient, ended.value
        assert "idle-in-transaction timeout" in str(ended.value)
        assert claim(engine, 1) == ["a"], "the ended claim kept nothing; the next one takes it"
    finally:
        witness.close()
        engine.close()


def test_a_reply_its_client_never_reads_ends_within_the_idle_timeout(pg_url: str) -> None:
    # A stopped process cannot read a reply larger than the connection's
    # buffers: the server waits to send it, not idle, inside the transaction.
    # Over TCP it ends the session all the same, and frees the lock.
    engine = PostgresEngine.open(pg_url, idle_timeout=0.5, max_connections=1)
    witness = psycopg.connect(pg_url, autocommit=True)

    def free() -> bool:
        row = witness.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242"
        ).fetchone()
        return row == (0,)

    try:
        with engine._pool.connection() as conn:
            conn.execute("BEGIN")
            conn.execute("SELECT pg_advisory_xact_lock(424242)")
            conn.pgconn.send_query(b"SELECT repeat('x', 100000000)")
            assert not free()
            wait_until(free)
    finally:
        witness.close()
        engine.close()


def test_the_idle_timeout_bounds_only_the_engines_own_connections(pg_url: str) -> None:
    engine = PostgresEngine.open(pg_url, idle_timeout=1.5, max_connections=1)
    try:
        with engine._pool.connection() as conn:
            row = conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
        assert row == ("1500ms",)
        with engine._pool.connection() as conn:
            row = conn.execute("SHOW tcp_user_timeout").fetchone()
        assert row == ("1500",)
        with psycopg.connect(pg_url) as theirs:
            own = theirs.execute("SHOW idle_in_transaction_session_timeout").fetchone()
            engine.write_in(theirs, create("b"), "enqueue")
            row = theirs.execute("SHOW idle_in_transaction_session_timeout").fetchone()
            assert row == own != ("1500ms",), "the application's session keeps its own setting"
    finally:
        engine.close()
    with pytest.raises(ValueError, match="idle_timeout is 0, want more than 0 seconds"):
        PostgresEngine.open(pg_url, idle_timeout=0)


def test_an_unreachable_server_raises_store_error(pg_server: str) -> None:
    url = with_query(with_port(pg_server, 1), connect_timeout="5")
    with pytest.raises(StoreError, match="open") as raised:
        PostgresEngine.open(url)
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)


def test_a_pool_lends_its_last_connection_to_one_caller_at_a_time(pg_url: str) -> None:
    # With its one connection lent, a caller waits for it to come back and
    # gets it; one that waits past the timeout gets a transient StoreError
    # (the runner retries it; the job's outcome is not replaced).
    pool = Pool(pg_url, "test", max_size=1, configure=lambda conn: None, timeout=LIMIT)
    short = Pool(pg_url, "test", max_size=1, configure=lambda conn: None, timeout=0.01)
    got: list[object] = []

    def wait_for_it() -> None:
        with pool.connection() as conn:
            got.append(conn)

    try:
        with pool.connection() as first:
            waiter = threading.Thread(target=wait_for_it)
            waiter.start()
            with short.connection(), pytest.raises(StoreError, match="1 connections stayed") as err:
                short.connection().__enter__()
            assert err.value.transient
        waiter.join(LIMIT)
        assert got == [first]  # the same connection, once returned
    finally:
        pool.close()
        short.close()


def test_a_pool_frees_the_place_of_a_connection_that_failed_to_open(pg_server: str) -> None:
    # Each caller tries to connect afresh: a failed attempt leaves no place taken.
    url = with_query(with_port(pg_server, 1), connect_timeout="5")
    pool = Pool(url, "test", max_size=1, configure=lambda conn: None, timeout=LIMIT)
    try:
        for _ in range(3):
            with pytest.raises(psycopg.OperationalError), pool.connection():
                pass
    finally:
        pool.close()


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


def traced(
    engine: PostgresEngine, path: pathlib.Path, run: Callable[[], object]
) -> list[list[str]]:
    """The messages libpq sent on the engine's one pooled connection while run ran."""
    with path.open("w") as out:
        with engine._pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            run()
        finally:
            with engine._pool.connection() as conn:
                conn.pgconn.untrace()
    return [line.split("\t") for line in path.read_text().splitlines()]


def sent_queries(sent: list[list[str]]) -> list[str]:
    """The simple queries (BEGIN, COMMIT, an empty probe shows as "") among messages sent."""
    return [fields[-1].strip() for fields in sent if fields[0] == "F" and "Query" in fields]


def executes(sent: list[list[str]]) -> int:
    """How many prepared statements the messages sent ran."""
    return sum(1 for fields in sent if fields[0] == "F" and "Execute" in fields)


def test_a_one_statement_write_sends_its_statement_alone(
    pg_url: str, tmp_path: pathlib.Path
) -> None:
    # libpq's trace of the one pooled connection shows every message sent:
    # a healthy connection leaving the pool is not probed with an empty
    # query, and an op of one statement gets no BEGIN and COMMIT.
    engine = PostgresEngine.open(pg_url, max_connections=1)

    class Claim(Statement[object]):
        def __call__(self, q: Queries) -> object:
            return claim_rows(q, 1, "r")

    def claim_then_enqueue() -> None:
        assert engine.write(Claim())
        enqueue(engine, "b")

    try:
        enqueue(engine, "a")
        sent = traced(engine, tmp_path / "trace", claim_then_enqueue)
        # Only enqueue's transaction sends queries of its own.
        assert sent_queries(sent) == ['"BEGIN"', '"COMMIT"']
        assert executes(sent) == 2
    finally:
        engine.close()


def test_an_enqueue_is_one_statement_of_one_job_or_several(
    pg_url: str, tmp_path: pathlib.Path
) -> None:
    engine = PostgresEngine.open(pg_url, max_connections=1)
    try:
        sent = traced(
            engine,
            tmp_path / "one",
            lambda: engine.write(create_jobs("k", [NewJob("a", "{}", now())], now())),
        )
        assert sent_queries(sent) == []  # one INSERT, no BEGIN and COMMIT round trips
        assert executes(sent) == 1
        two = create_jobs("k", [NewJob("b", "{}", now()), NewJob("c", "{}", now())], now())
        sent = traced(engine, tmp_path / "two", lambda: engine.write(two))
        # One INSERT of both rows, its own transaction: no BEGIN and COMMIT.
        assert sent_queries(sent) == []
        assert executes(sent) == 1
        rows = engine.read(lambda q: [q.get_job(id=i) for i in "abc"])
        assert [None if row is None else row.status for row in rows] == ["queued"] * 3
        # Both or neither: the server refuses the taken id "a", so "d" is not stored.
        taken = create_jobs("k", [NewJob("d", "{}", now()), NewJob("a", "{}", now())], now())
        with pytest.raises(StoreError) as refused:
            engine.write(taken)
        assert not refused.value.transient
        assert engine.read(lambda q: q.get_job(id="d")) is None
    finally:
        engine.close()


def test_jobs_stored_together_read_back_as_the_same_jobs_stored_alone(
    engine: PostgresEngine,
) -> None:
    # CreateJobs sends its jobs as one JSON parameter, CreateJob as columns:
    # every field reads back the same either way, text of any kind, float
    # timeouts, a run_at to come (scheduled) and a zone other than UTC
    # included. The jobs are of two kinds at two moments, as concurrent
    # enqueues sharing a statement are.
    moment, later = now(), "2031-05-06T07:08:09.123456+02:00"
    odd = 'quote " backslash \\ tab \t newline \n é 漢 🙂 \u2028'

    def jobs(prefix: str) -> list[NewJob]:
        return [
            NewJob(f"{prefix}1", f'{{"text": "{odd}"}}', moment, priority=-3, max_attempts=4),
            NewJob(f"{prefix}2", "[1, 2.5e-7]", later, queue=odd, timeout=0.1),
            NewJob(f"{prefix}3", "{}", moment, timeout=7, traceparent="00-" + "a" * 32 + "-x-01"),
        ]

    for job in jobs("alone"):
        engine.write(create_jobs("kind one", [job], moment))
    together = jobs("together")
    # Through the seam's insert_jobs, in a transaction of the engine's.
    engine.write(lambda q: q.insert_jobs(kind="kind one", jobs=together, now=moment))
    engine.write(create_jobs(odd, jobs("other"), later))

    def read(job_id: str) -> tuple[object, ...]:
        record = engine.read(lambda q: q.get_job_record(id=job_id))
        assert record is not None
        return (
            record.kind, record.queue, record.priority, record.status, record.payload,
            record.max_attempts, record.timeout, record.run_at, record.created_at,
        )  # fmt: skip

    for n in "123":
        assert read(f"together{n}") == read(f"alone{n}")
    assert read("other1")[0] == odd
    assert read("other1")[8] == read("other2")[8]  # created at the call's moment
    scheduled = engine.read(lambda q: q.next_run_at(queue=odd))
    assert scheduled == read("alone2")[7]


def test_listening_on_a_closed_engine_raises_store_error(pg_url: str) -> None:
    engine = PostgresEngine.open(pg_url)
    engine.close()
    with pytest.raises(StoreError, match="closed"):
        engine.listen(lambda: None)


def test_repr_and_errors_never_show_the_password(pg_url: str) -> None:
    engine = PostgresEngine.open(with_password(pg_url, "hunter2"))
    engine.close()
    unreachable = with_password(with_port(pg_url, 1), "hunter2")
    with pytest.raises(StoreError) as raised:
        PostgresEngine.open(unreachable)
    assert "hunter2" not in repr(engine)
    assert "hunter2" not in str(raised.value)


def test_postgres_engine_is_an_engine(engine: PostgresEngine) -> None:
    # mypy proves the protocol at this assignment; the assert keeps it used.
    as_engine: Engine = engine
    assert as_engine is engine


def test_a_listener_that_cannot_connect_names_the_listen_url(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The store's own URL works; only the listening one, on a closed port, does not.
    dead = "postgresql://app:secret@127.0.0.1:1/app"
    engine = PostgresEngine.open(pg_url, pooled=True, listen_url=dead)
    try:
        with caplog.at_level(logging.WARNING, logger="jobtable.postgres"):
            stop = engine.listen(lambda: None)
            wait_until(lambda: any("cannot listen" in r.getMessage() for r in caplog.records))
            stop()
    finally:
        engine.close()
    [warned] = [r.getMessage() for r in caplog.records if "cannot listen" in r.getMessage()]
    assert "(listening on postgresql://app:***@127.0.0.1:1/app)" in warned
    assert "secret" not in warned
