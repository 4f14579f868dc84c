"""Group commit of concurrent enqueues on PostgreSQL (the engine's batch), on a real server.

A lone enqueue commits alone (test_postgres_engine.py checks it stays one
INSERT); enqueues that arrive while one is under way share the next
transaction. Each test holds a first enqueue open inside its operation, so
the others are sure to queue behind it, and counts transactions the way the
server records them: rows inserted by one transaction share its xmin.
Nothing here is timed.
"""

import asyncio
import pathlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import pg_cluster
import psycopg
import pytest
from interrupting import interrupt_queued_write
from seam import claim, enqueue, exists, now

from jobtable._engines.base import JobInserts, Queries
from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._engines.rows import NewJob
from jobtable._errors import StoreError
from jobtable._operations import CreateJob, CreateJobs, create_jobs
from jobtable._unique import EnqueueResult, create_unique_jobs

LIMIT = 10.0
"""Seconds a test waits for another thread before it fails."""


@pytest.fixture
def engine(pg_url: str) -> Iterator[PostgresEngine]:
    """An engine on the test's own schema, closed after the test."""
    opened = PostgresEngine.open(pg_url)
    yield opened
    opened.close()


def job(job_id: str) -> CreateJobs:
    """The enqueue of one job of kind k with id job_id."""
    return create_jobs("k", [NewJob(job_id, "{}", now())], now())


class HeldEnqueue(CreateJob):
    """An enqueue that waits, inside its operation, until released."""

    def __init__(self, job_id: str) -> None:
        super().__init__("k", [NewJob(job_id, "{}", now())], now())
        self.entered = threading.Event()
        self.release = threading.Event()

    def insert(self, q: JobInserts) -> None:
        self.entered.set()
        if not self.release.wait(LIMIT):
            raise TimeoutError("the held enqueue was never released")
        super().insert(q)


class RaisingEnqueue(CreateJobs):
    """An enqueue whose operation raises after its INSERT."""

    def __init__(self, job_id: str, error: Exception) -> None:
        super().__init__("k", [NewJob(job_id, "{}", now())], now())
        self.error = error

    def insert(self, q: JobInserts) -> None:
        super().insert(q)
        raise self.error


class Leader:
    """A synchronous enqueue, in a thread of its own, that holds its write open until finish."""

    def __init__(self, engine: PostgresEngine, job_id: str = "leader") -> None:
        self.op = HeldEnqueue(job_id)
        self.raised: BaseException | None = None
        self.thread = threading.Thread(target=self._lead, args=(engine,))
        self.thread.start()
        assert self.op.entered.wait(LIMIT)

    def _lead(self, engine: PostgresEngine) -> None:
        try:
            engine.write(self.op)
        except BaseException as err:
            self.raised = err

    def finish(self) -> None:
        self.op.release.set()
        self.thread.join(LIMIT)
        assert not self.thread.is_alive()


def start_writers(
    engine: PostgresEngine, ops: Sequence[Callable[[Queries], object]]
) -> Callable[[], list[object]]:
    """Starts a thread per op calling engine.write; returns what joins them, giving outcomes."""
    outcomes: list[object] = [None] * len(ops)

    def write(i: int) -> None:
        try:
            outcomes[i] = engine.write(ops[i])
        except BaseException as err:
            outcomes[i] = err

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(ops))]
    for thread in threads:
        thread.start()

    def join() -> list[object]:
        for thread in threads:
            thread.join(LIMIT)
            assert not thread.is_alive()
        return outcomes

    return join


def wait_for_queued(engine: PostgresEngine, count: int) -> None:
    """Waits until count enqueues wait for a group transaction; fails after LIMIT seconds."""
    deadline = time.monotonic() + LIMIT
    while engine._enqueues.pending < count:
        if time.monotonic() > deadline:
            pytest.fail(f"{engine._enqueues.pending} enqueues queued, want {count}")
        time.sleep(0.005)


def transactions(url: str, ids: Sequence[str]) -> int:
    """How many transactions inserted the jobs ids, as the server recorded them (xmin)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT xmin::text), count(*) FROM jobs WHERE id = ANY(%s)", [list(ids)]
        ).fetchone()
    assert row is not None
    assert row[1] == len(ids), f"{row[1]} of the {len(ids)} jobs are stored"
    return int(row[0])


def test_enqueues_behind_an_enqueue_under_way_commit_in_one_transaction(
    engine: PostgresEngine, pg_url: str
) -> None:
    ids = [f"j{n}" for n in range(20)]
    before = engine._enqueues.commits
    leader = Leader(engine)
    join = start_writers(engine, [job(i) for i in ids])
    wait_for_queued(engine, len(ids))
    leader.finish()
    assert join() == [None] * len(ids)
    assert leader.raised is None
    # The leader alone, then the 20 behind it together: 2, not 21.
    assert transactions(pg_url, ["leader", *ids]) == 2
    assert engine._enqueues.commits - before == 2


def test_a_lone_enqueue_after_a_batch_commits_alone_again(
    engine: PostgresEngine, pg_url: str
) -> None:
    leader = Leader(engine)
    join = start_writers(engine, [job("a"), job("b")])
    wait_for_queued(engine, 2)
    leader.finish()
    join()
    engine.write(job("c"))
    assert transactions(pg_url, ["c"]) == 1
    assert transactions(pg_url, ["a", "b", "c"]) == 2


def test_a_failing_enqueue_among_those_sharing_a_transaction_fails_alone(
    engine: PostgresEngine,
) -> None:
    enqueue(engine, "taken")
    boom = ValueError("the op's own failure")
    leader = Leader(engine)
    naive = create_jobs("k", [NewJob("naive", "{}", "2030-01-01T00:00:00")], now())
    ops = [job("a"), job("taken"), RaisingEnqueue("raised", boom), naive, job("b")]
    join = start_writers(engine, ops)
    wait_for_queued(engine, len(ops))
    leader.finish()
    a, taken, raised, zoneless, b = join()
    assert (a, b) == (None, None)
    assert isinstance(taken, StoreError)  # the server refused the duplicate id
    assert not taken.transient
    assert raised is boom
    assert isinstance(zoneless, ValueError)  # a run_at without a zone, refused before sending
    assert not exists(engine, "naive")
    assert exists(engine, "a")
    assert exists(engine, "b")
    assert not exists(engine, "raised")  # its INSERT was rolled back with it
    engine.write(job("after"))  # the group commit went idle in working order
    assert exists(engine, "after")


def test_aenqueues_waiting_together_commit_in_one_transaction(
    engine: PostgresEngine, pg_url: str
) -> None:
    ids = [f"t{n}" for n in range(30)]

    async def enqueue_all() -> list[None]:
        tasks = [asyncio.create_task(engine.awrite(job(i))) for i in ids]
        await asyncio.to_thread(wait_for_queued, engine, len(ids))
        leader.finish()
        return await asyncio.gather(*tasks)

    leader = Leader(engine)
    assert asyncio.run(enqueue_all()) == [None] * len(ids)
    assert transactions(pg_url, ["leader", *ids]) == 2


def test_a_lone_aenqueue_commits_alone(engine: PostgresEngine, pg_url: str) -> None:
    asyncio.run(engine.awrite(job("a")))
    asyncio.run(engine.awrite(job("b")))
    assert transactions(pg_url, ["a", "b"]) == 2


def enqueue_interrupted(
    engine: PostgresEngine, *, once_batch_delivered: bool
) -> tuple[list[object], bool]:
    """The main thread's enqueue of "interrupted", between "before" and "after", interrupted."""
    leader = Leader(engine)
    return interrupt_queued_write(
        write=lambda: engine.write(job("interrupted")),
        start_before=lambda: start_writers(engine, [job("before")]),
        start_after=lambda: start_writers(engine, [job("after")]),
        wait_for_queued=lambda count: wait_for_queued(engine, count),
        finish_leader=leader.finish,
        once_batch_delivered=once_batch_delivered,
        limit=LIMIT,
    )


def test_a_caller_interrupted_while_it_waits_does_not_keep_the_next_caller_waiting(
    engine: PostgresEngine, pg_url: str
) -> None:
    after, interrupted = enqueue_interrupted(engine, once_batch_delivered=False)
    assert interrupted
    assert after == [None]
    # Its enqueue still ran with its batch.
    assert transactions(pg_url, ["before", "interrupted", "after"]) == 1


def test_a_caller_interrupted_once_its_batch_is_over_still_wakes_the_next_caller(
    engine: PostgresEngine, pg_url: str
) -> None:
    after, interrupted = enqueue_interrupted(engine, once_batch_delivered=True)
    assert interrupted
    assert after == [None]
    assert transactions(pg_url, ["before", "interrupted", "after"]) == 1
    engine.write(job("later"))
    assert exists(engine, "later")


def test_close_commits_the_enqueues_queued_then_refuses_more(pg_url: str) -> None:
    engine = PostgresEngine.open(pg_url)
    leader = Leader(engine)
    join = start_writers(engine, [job("a"), job("b")])
    wait_for_queued(engine, 2)
    closing = threading.Thread(target=engine.close)
    closing.start()
    leader.finish()
    closing.join(LIMIT)
    assert not closing.is_alive()
    assert join() == [None, None]
    with pytest.raises(StoreError, match="closed"):
        engine.write(job("c"))
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(engine.awrite(job("d")))
    assert transactions(pg_url, ["leader", "a", "b"]) == 2


def test_enqueues_sharing_a_transaction_share_one_statement(
    pg_url: str, tmp_path: pathlib.Path
) -> None:
    # libpq's trace of the engine's one connection: the leader's INSERT is
    # answered at its Sync; the three behind it go in one INSERT of three
    # rows, without BEGIN and COMMIT.
    engine = PostgresEngine.open(pg_url, max_connections=1)
    trace = tmp_path / "trace"
    try:
        with trace.open("w") as out:
            with engine._pool.connection() as conn:
                conn.pgconn.trace(out.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            leader = Leader(engine)
            join = start_writers(engine, [job("a"), job("b"), job("c")])
            wait_for_queued(engine, 3)
            leader.finish()
            assert join() == [None] * 3
            with engine._pool.connection() as conn:
                conn.pgconn.untrace()
    finally:
        engine.close()
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    sent = [fields[2] for fields in lines if len(fields) > 2 and fields[0] == "F"]
    assert sent.count("Execute") == 2  # the leader's and the three's
    assert sent.count("Sync") == 2
    assert "Query" not in sent  # no BEGIN, no COMMIT
    assert transactions(pg_url, ["leader", "a", "b", "c"]) == 2


def test_a_shared_statement_notifies_listeners_as_it_commits(
    engine: PostgresEngine, pg_url: str
) -> None:
    # The insert trigger notifies once per statement, at its commit: the
    # leader's INSERT and the shared one of the three behind it make two
    # notifications. (Runners listen through engine.listen, which turns
    # them into wake-ups; here a session listens itself to count them.)
    with psycopg.connect(pg_url, autocommit=True) as listening:
        listening.execute("SELECT jobtable_listen()")
        leader = Leader(engine)
        join = start_writers(engine, [job("a"), job("b"), job("c")])
        wait_for_queued(engine, 3)
        leader.finish()
        assert join() == [None] * 3
        heard = list(listening.notifies(timeout=LIMIT, stop_after=2))
    assert len(heard) == 2
    assert transactions(pg_url, ["leader", "a", "b", "c"]) == 2


def test_claims_and_unique_enqueues_do_not_wait_behind_enqueues_under_way(
    engine: PostgresEngine, pg_url: str
) -> None:
    # Only plain enqueues ride on a shared statement: a claim, and a unique
    # enqueue (which reads the holder back), run on their own connections
    # while the leader holds its enqueue open and two wait behind it.
    enqueue(engine, "ready")
    leader = Leader(engine)
    join = start_writers(engine, [job("a"), job("b")])
    wait_for_queued(engine, 2)
    assert claim(engine, 1) == ["ready"]

    def unique(job_id: str, key: str) -> NewJob:
        return NewJob(job_id, "{}", now(), unique_key=key, unique_statuses=3)

    # Collisions within one call and with a job stored before it.
    first = engine.write(create_unique_jobs("k", [unique("u1", "x")], now()))
    assert first == [EnqueueResult("u1", duplicate=False)]
    many = create_unique_jobs("k", [unique("u2", "x"), unique("u3", "y"), unique("u4", "y")], now())
    assert engine.write(many) == [
        EnqueueResult("u1", duplicate=True),
        EnqueueResult("u3", duplicate=False),
        EnqueueResult("u3", duplicate=True),
    ]
    assert engine._enqueues.pending == 2  # all of that went past them
    leader.finish()
    assert join() == [None, None]
    assert transactions(pg_url, ["leader", "a", "b"]) == 2
    assert not exists(engine, "u2")
    assert not exists(engine, "u4")


def test_unique_enqueues_from_many_threads_store_one_job_a_key(engine: PostgresEngine) -> None:
    # Concurrent unique enqueues of one key, with plain enqueues sharing
    # statements around them: the server lets one store; the others name it.
    leader = Leader(engine)
    plain = [job(f"p{n}") for n in range(8)]
    uniques = [
        create_unique_jobs(
            "k", [NewJob(f"u{n}", "{}", now(), unique_key="x", unique_statuses=3)], now()
        )
        for n in range(8)
    ]
    join = start_writers(engine, [*plain, *uniques])
    wait_for_queued(engine, len(plain))
    leader.finish()
    outcomes = join()
    assert outcomes[: len(plain)] == [None] * len(plain)
    unique_outcomes = outcomes[len(plain) :]
    assert all(isinstance(outcome, list) for outcome in unique_outcomes)
    results = [r for outcome in unique_outcomes for r in cast("list[EnqueueResult]", outcome)]
    stored = [r.id for r in results if not r.duplicate]
    assert len(stored) == 1
    assert {r.id for r in results} == set(stored)
    assert all(exists(engine, f"p{n}") for n in range(8))


@pytest.mark.slow
def test_a_batch_that_finds_the_server_gone_fails_whole_with_a_transient_error(
    throwaway_pg: pg_cluster.Cluster,
) -> None:
    # The enqueues queued behind the leader are not run again one by one
    # against a server that is gone: each gets the batch's StoreError.
    engine = PostgresEngine.open(throwaway_pg.url, max_connections=1)
    try:
        leader = Leader(engine)
        join = start_writers(engine, [job("a"), job("b"), job("c")])
        wait_for_queued(engine, 3)
        throwaway_pg.stop("immediate")
        leader.finish()
        outcomes = join()
        assert isinstance(leader.raised, StoreError)
        assert all(isinstance(o, StoreError) and o.transient for o in outcomes)
        assert len({id(o) for o in outcomes}) == 1  # one attempt for the three
        throwaway_pg.start()
        engine.write(job("after"))  # the next enqueue reconnects
        assert exists(engine, "after")
        assert not any(exists(engine, i) for i in "abc")
    finally:
        engine.close()
