"""Fault tests with real worker processes on one database.

Each worker is ``fault_worker.py`` beside this file, a real ``Runner.run()``
in a process of its own. Every handler run leaves one file named by job id
and process id (see the worker's docstring), so the tests count runs across
processes, killed ones included. The parent process only enqueues and reads,
except where a test says it runs a live runner itself.

The faults: a worker killed with SIGKILL mid-job among live ones; a worker
paused with SIGSTOP past its lease, whose late writes must be fenced; a
job's outcome write refused for longer than the runner's retry backoff; a job
enqueued in one process starting in another (NOTIFY on PostgreSQL, polling on
SQLite); a throwaway PostgreSQL server (a cluster of the test's own)
restarted under running workers; and the LISTEN connection dropped.
"""

import asyncio
import collections
import contextlib
import dataclasses
import os
import pathlib
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pg_cluster
import pytest

import jobtable

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

WORKER = pathlib.Path(__file__).with_name("fault_worker.py")
LEASE = 1.0
"""The lease of the tests' runners, in seconds: small, so that dead runners are found soon."""

# What the runner and the engine log, as the tests look for it.
FENCED = "record job outcome: job is not running under this claim"
PROCESS_GONE = "jobs of runners whose process ended"
LEASE_LOST = "registering again"
LISTEN_DOWN = "cannot listen for enqueues"
LISTEN_BACK = "listening for enqueues again"
RETRYING = "retrying"


# The parent's kinds: the worker's kinds and types. The parent never runs
# their jobs; a handler here that runs is a bug in the test or the runner.


def _never_work(ctx: jobtable.JobContext[str], payload: float) -> str:
    raise AssertionError(f"the parent process ran work job {ctx.id}")


def _never_stamp(ctx: jobtable.JobContext[float], payload: int) -> float:
    raise AssertionError(f"the parent process ran stamp job {ctx.id}")


def _never_fence(ctx: jobtable.JobContext[str], payload: int) -> str:
    raise AssertionError(f"the parent process ran fence job {ctx.id}")


@dataclasses.dataclass
class Client:
    """A runner of the parent process with the worker's kinds."""

    runner: jobtable.Runner
    work: jobtable.Kind[float, str]
    stamp: jobtable.Kind[int, float]
    fence: jobtable.Kind[int, str]


def client(store: jobtable.Store, name: str = "parent", **options: Any) -> Client:
    runner = jobtable.Runner(store, name=name, **options)
    return Client(
        runner,
        runner.register("work", _never_work),
        runner.register("stamp", _never_stamp),
        runner.register("fence", _never_fence),
    )


# Worker processes.


@dataclasses.dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log_path: pathlib.Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        """Everything the worker has logged so far."""
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")


class Spawner:
    """Starts worker processes; kill_all kills and reaps every one still running."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.tmp_path = tmp_path
        self.runs = tmp_path / "runs"
        self.runs.mkdir()
        self.workers: list[Worker] = []

    def start(
        self,
        target: str,
        name: str,
        *,
        workers: int = 2,
        lease: float = LEASE,
        poll: float = 0.05,
        extra: Sequence[str] = (),
    ) -> Worker:
        log_path = self.tmp_path / f"{name}.log"
        args = [sys.executable, str(WORKER), target, name, "--runs", str(self.runs)]
        args += ["--workers", str(workers), "--lease", str(lease), "--poll", str(poll), *extra]
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        worker = Worker(name, process, log_path)
        self.workers.append(worker)
        return worker

    def kill_all(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.kill()
        for worker in self.workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(timeout=30)

    def logs(self) -> str:
        return "\n".join(f"--- {w.name} (pid {w.pid}) ---\n{w.log()}" for w in self.workers)


@pytest.fixture
def spawner(tmp_path: pathlib.Path) -> Iterator[Spawner]:
    """Starts worker processes; after the test kills any still running and prints their logs."""
    spawned = Spawner(tmp_path)
    try:
        yield spawned
    finally:
        spawned.kill_all()
        print(spawned.logs())


async def exit_code(worker: Worker, limit: float = 30.0) -> int:
    try:
        return await asyncio.to_thread(worker.process.wait, limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"worker {worker.name} did not exit within {limit} s")


async def stop_gracefully(worker: Worker) -> None:
    """SIGTERM, then the worker must exit 0 (Runner.run's graceful stop)."""
    assert worker.process.poll() is None, f"worker {worker.name} died early"
    worker.process.send_signal(signal.SIGTERM)
    assert await exit_code(worker) == 0


async def start_latency(parent: Client, wait_until: WaitUntil) -> tuple[str, float]:
    """Enqueues a stamp job, waits for it to succeed; returns its id and enqueue-to-start time."""
    enqueued_at = time.time()
    job_id = parent.stamp.enqueue(0)
    await wait_until(
        lambda: parent.stamp.get(job_id).status is jobtable.Status.SUCCEEDED,
        limit=30,
        interval=0.005,
    )
    started = parent.stamp.get(job_id).result
    assert started is not None
    return job_id, started - enqueued_at


def runs(spawner: Spawner) -> dict[str, list[int]]:
    """The pids that ran each job, one entry per run, from the worker's run files."""
    found: dict[str, list[int]] = collections.defaultdict(list)
    for path in spawner.runs.iterdir():
        job_id, pid, _ = path.name.split(".")
        found[job_id].append(int(pid))
    return found


# Reading the database directly, as an operator would: the Job the API
# returns has no runner, attempt or update time.


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def select(target: str, query: str, *params: object) -> list[tuple[Any, ...]]:
    """Runs a read-only query (``?`` parameters) on the test's database, in a new connection."""
    if is_postgres(target):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            return conn.execute(query.replace("?", "%s"), params).fetchall()
    with contextlib.closing(sqlite3.connect(f"file:{target}?mode=ro", uri=True)) as conn:
        return conn.execute(query, params).fetchall()


def execute(target: str, *statements: str) -> None:
    """Runs statements on the test's database, each committed at once."""
    if is_postgres(target):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())
        return
    with contextlib.closing(sqlite3.connect(target, timeout=30, isolation_level=None)) as conn:
        for statement in statements:
            conn.execute(statement)


def count(target: str, status: str) -> int:
    found: int = select(target, "SELECT count(*) FROM jobs WHERE status = ?", status)[0][0]
    return found


def job_row(target: str, job_id: str) -> tuple[Any, ...]:
    """Every column a worker's write could change."""
    rows = select(
        target,
        "SELECT status, result, error, runner, attempt, updated_at FROM jobs WHERE id = ?",
        job_id,
    )
    assert len(rows) == 1, f"job {job_id}: {rows}"
    return rows[0]


def with_query(url: str, key: str, value: str) -> str:
    """Returns url with the query parameter key set to value."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != key]
    query.append((key, value))
    return urlunsplit(parts._replace(query=urlencode(query)))


# Pausing a process where it holds no database lock. A process stopped inside
# a write transaction blocks every writer of the database (SQLite's one write
# lock; PostgreSQL's row locks): that is the database's nature, not the
# runner's, and not the fault under test. So the pause is retried until it
# lands outside one.


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat", encoding="ascii") as file:
        return file.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def _holds_no_lock(target: str, application_name: str) -> bool:
    if is_postgres(target):
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            busy = select(
                target,
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = ? "
                "AND state IS DISTINCT FROM 'idle'",
                application_name,
            )[0][0]
            if busy == 0:
                return True
            time.sleep(0.05)
        return False
    conn = sqlite3.connect(target, timeout=0.5, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


async def pause_outside_transaction(worker: Worker, target: str, application_name: str) -> None:
    for _ in range(50):
        os.kill(worker.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while not _stopped(worker.pid):
            assert time.monotonic() < deadline, "SIGSTOP did not stop the worker"
            await asyncio.sleep(0.005)
        if await asyncio.to_thread(_holds_no_lock, target, application_name):
            return
        os.kill(worker.pid, signal.SIGCONT)
        await asyncio.sleep(0.01 + secrets.randbelow(50) / 1000)
    pytest.fail("could not pause the worker outside a write transaction in 50 tries")


# 1. SIGKILL among live workers.


async def test_a_worker_killed_mid_job_among_live_ones_loses_only_its_held_jobs(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
    finished: Finished,
) -> None:
    """Three worker processes; the one holding jobs is killed with SIGKILL.

    The two live ones keep working, and one of them (no restart) fails the
    dead runner's held jobs as interrupted: all run on this host, so the
    process watch sees the process gone without waiting for the lease
    (test_fault_crash.py measures that). Every other job runs exactly once,
    in a live process.
    """
    began = time.monotonic()
    parent = client(store)
    before = parent.work.enqueue_many([0.1] * 60)
    # The victim starts first and holds its two jobs until it dies, so it
    # certainly holds jobs when it is killed.
    victim = spawner.start(store_target, "w0", extra=["--hold", "--publish"])
    held_by_victim = (
        "SELECT id FROM jobs WHERE status = 'running' AND runner = 'w0' AND result IS NOT NULL"
    )
    await wait_until(
        lambda: len(select(store_target, held_by_victim)) == 2, limit=60, interval=0.05
    )
    held = sorted(row[0] for row in select(store_target, held_by_victim))
    live = [spawner.start(store_target, f"w{i}", extra=["--publish"]) for i in (1, 2)]
    await wait_until(lambda: count(store_target, "succeeded") >= 10, limit=60, interval=0.05)

    victim.process.kill()
    assert await exit_code(victim) == -signal.SIGKILL
    killed_at = time.monotonic()
    # A live peer may have interrupted them already: it needs no lease to see the process gone.
    after = parent.work.enqueue_many([0.1] * 40)

    def held_failed() -> bool:
        return all(parent.runner.get(i).status is jobtable.Status.FAILED for i in held)

    await wait_until(held_failed, limit=10 * LEASE, interval=0.02)
    recovered_in = time.monotonic() - killed_at
    await wait_until(finished(parent.runner, before + after), limit=60, interval=0.05)
    for worker in live:
        assert worker.process.poll() is None, f"{worker.name} died:\n{worker.log()}"

    for job_id in held:
        job = parent.runner.get(job_id)
        assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERRUPTED)
        assert job.result == f"w0 {victim.pid}", "the dead runner's partial result is kept"
    assert any(PROCESS_GONE in w.log() for w in live), spawner.logs()

    ran = runs(spawner)
    live_pids = {w.pid: w.name for w in live}
    assert {job_id: ran[job_id] for job_id in held} == {job_id: [victim.pid] for job_id in held}
    others = [i for i in before + after if i not in held]
    assert set(ran) == set(held) | set(others), "every job ran, and no other"
    for job_id in others:
        job = parent.runner.get(job_id)
        assert job.status is jobtable.Status.SUCCEEDED, (job_id, job)
        assert len(ran[job_id]) == 1, f"job {job_id} ran {len(ran[job_id])} times"
        assert ran[job_id][0] in live_pids, f"job {job_id} ran in the killed worker"
        assert job.result == live_pids[ran[job_id][0]]
    assert {ran[i][0] for i in after} == set(live_pids), "both live workers kept working"

    for worker in live:
        await stop_gracefully(worker)
    print(
        f"{engine}: the dead runner's {len(held)} jobs failed {recovered_in:.2f} s after "
        f"SIGKILL (lease {LEASE} s); {len(others)} others ran once each; "
        f"test took {time.monotonic() - began:.1f} s"
    )


# 2. Fencing: a paused worker resumes after its job was failed.


async def test_a_paused_worker_that_resumes_after_its_job_was_failed_cannot_write_to_it(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
    tmp_path: pathlib.Path,
) -> None:
    """SIGSTOP a worker mid-job past its lease; a live runner fails the job as interrupted.

    After SIGCONT the worker's handler publishes and returns a result; both
    writes are refused by the claim's fence, and the job's row stays exactly
    as the live runner left it.
    """
    began = time.monotonic()
    gate = tmp_path / "gate"
    application_name = f"jobtable-fault-{secrets.token_hex(4)}"
    worker_target = store_target
    if is_postgres(store_target):
        worker_target = with_query(store_target, "application_name", application_name)
    live = client(store, name="live", workers=1, lease=LEASE, poll_interval=0.05)
    job_id = live.fence.enqueue(0)
    worker = spawner.start(worker_target, "paused", workers=1, extra=["--gate", str(gate)])
    await wait_until(lambda: live.fence.get(job_id).result == "started", limit=60, interval=0.05)
    await pause_outside_transaction(worker, store_target, application_name)
    paused_at = time.monotonic()

    await live.runner.start()
    try:
        await wait_until(
            lambda: live.fence.get(job_id).status is jobtable.Status.FAILED,
            limit=10 * LEASE,
            interval=0.02,
        )
        failed_in = time.monotonic() - paused_at
        failed = job_row(store_target, job_id)
        assert failed[:4] == (
            "failed",
            '"started"',
            jobtable.MESSAGE_INTERRUPTED,
            "paused",
        )

        gate.touch()
        os.kill(worker.pid, signal.SIGCONT)
        await wait_until(lambda: FENCED in worker.log(), limit=30, interval=0.05)
        log = worker.log()
        assert f"fence {job_id}: late publish refused" in log
        assert f"fence {job_id}: late publish accepted" not in log
        assert job_row(store_target, job_id) == failed, "the resumed worker changed the job"
        job = live.fence.get(job_id)
        assert (job.status, job.result, job.error) == (
            jobtable.Status.FAILED,
            "started",
            jobtable.MESSAGE_INTERRUPTED,
        )
    finally:
        live.runner.stop()
        await live.runner.wait()
    # The resumed runner carries on: it registers again and stops cleanly.
    await wait_until(lambda: LEASE_LOST in worker.log(), limit=30, interval=0.05)
    await stop_gracefully(worker)
    assert job_row(store_target, job_id) == failed
    assert runs(spawner) == {job_id: [worker.pid]}
    print(
        f"{engine}: paused job failed {failed_in:.2f} s after SIGSTOP (lease {LEASE} s); "
        f"late writes fenced; test took {time.monotonic() - began:.1f} s"
    )


# 2b. An outcome write refused for longer than the runner's retry backoff.

# A transient refusal: a serialization failure (SQLSTATE 40001), which the
# runner classifies as worth retrying, as it does a lost connection.
_REFUSE_SUCCESS = (
    "CREATE FUNCTION fault_refuse_success() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'fault test: success refused' USING ERRCODE = '40001'; END $$",
    "CREATE TRIGGER fault_refuse_success BEFORE UPDATE ON jobs FOR EACH ROW "
    "WHEN (NEW.status = 'succeeded') EXECUTE FUNCTION fault_refuse_success()",
)
_ALLOW_SUCCESS = ("DROP TRIGGER fault_refuse_success ON jobs",)


async def test_an_outcome_write_refused_for_a_while_lands_once_the_database_accepts_it(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
) -> None:
    """The database refuses a job's success for a while (an outage, a failover), then accepts it.

    The refusal is transient, as an outage's errors are: on SQLite another
    connection holds the write lock (SQLITE_BUSY), on PostgreSQL a trigger
    raises a serialization failure. The job must not stay running forever
    under a live runner, which keeps its lease and so is never failed by a
    peer: the runner keeps retrying the outcome, well past the tries a
    stopping runner gives up after, and stores it once the database takes
    writes again. A short retry backoff (and, on SQLite, a short busy
    timeout) makes the many tries quick.
    """
    began = time.monotonic()
    retries = 12  # more than give_up_after (8)
    parent = client(store)
    quick = ["--retry-cap", "0.05", "--busy-timeout", "0.05"]
    lock: sqlite3.Connection | None = None
    if engine == "postgres":
        execute(store_target, *_REFUSE_SUCCESS)
        job_id = parent.work.enqueue(0.05)
        worker = spawner.start(store_target, "w", workers=1, extra=quick)
    else:
        # Long enough for the lock to be taken while the handler still runs.
        job_id = parent.work.enqueue(3.0)
        worker = spawner.start(store_target, "w", workers=1, extra=quick)
        await wait_until(lambda: parent.work.get(job_id).status is jobtable.Status.RUNNING)
        lock = sqlite3.connect(store_target, timeout=60, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
    try:
        await wait_until(
            lambda: worker.log().count("record job outcomes; retrying") >= retries, limit=60
        )
        assert parent.work.get(job_id).status is jobtable.Status.RUNNING
    finally:
        if lock is None:
            execute(store_target, *_ALLOW_SUCCESS)
        else:
            lock.execute("ROLLBACK")
            lock.close()
    allowed = time.monotonic()
    await wait_until(
        lambda: parent.work.get(job_id).status is not jobtable.Status.RUNNING,
        limit=30,
        interval=0.05,
    )
    job = parent.work.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "w")
    assert runs(spawner) == {job_id: [worker.pid]}
    await stop_gracefully(worker)
    print(
        f"{engine}: success refused for {retries} tries, stored "
        f"{time.monotonic() - allowed:.2f} s after it was allowed; "
        f"test took {time.monotonic() - began:.1f} s"
    )


# 3. Cross-process wake-up.


async def test_a_job_enqueued_in_another_process_starts_promptly(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
) -> None:
    """A job the parent enqueues starts in an idle worker process at once.

    On PostgreSQL the worker polls only every 30 s, so only NOTIFY explains a
    start within seconds; on SQLite, which cannot notify, the worker polls
    every 0.2 s and the job starts within a few intervals.
    """
    poll, bound = (30.0, 5.0) if engine == "postgres" else (0.2, 2.0)
    parent = client(store)
    worker = spawner.start(store_target, "w", workers=1, poll=poll)
    await wait_until(
        lambda: bool(select(store_target, "SELECT 1 FROM runners WHERE name = 'w'")),
        limit=60,
        interval=0.05,
    )
    warm_up = parent.stamp.enqueue(0)
    await wait_until(
        lambda: parent.stamp.get(warm_up).status is jobtable.Status.SUCCEEDED,
        limit=30,
        interval=0.02,
    )
    idle_since = time.monotonic()
    latencies: list[float] = []
    started: list[str] = []
    for i in range(5):
        # Land at different points of the poll cycle.
        await asyncio.sleep(0.3 + 0.07 * i)
        job_id, latency = await start_latency(parent, wait_until)
        started.append(job_id)
        latencies.append(latency)
    elapsed = time.monotonic() - idle_since
    print(
        f"{engine} (poll_interval {poll} s): enqueue-to-start latencies "
        + ", ".join(f"{1000 * t:.1f} ms" for t in latencies)
    )
    if engine == "postgres":
        assert elapsed < poll, "the test ran too long for polling to be ruled out"
    assert max(latencies) < bound, latencies
    assert runs(spawner) == {i: [worker.pid] for i in [warm_up, *started]}
    await stop_gracefully(worker)


# 4. PostgreSQL restarted under running workers.


def _server_ready(server_url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(server_url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


async def wait_for_server(server_url: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not await asyncio.to_thread(_server_ready, server_url):
        if time.monotonic() > deadline:
            pytest.fail(f"PostgreSQL was not ready again within {limit} s of its restart")
        await asyncio.sleep(0.1)


async def test_workers_survive_a_postgres_restart_and_lose_or_repeat_no_job(
    throwaway_pg: pg_cluster.Cluster,
    spawner: Spawner,
    wait_until: WaitUntil,
) -> None:
    """The server restarts while two worker processes run a stream of ~50 ms jobs.

    The server is a throwaway cluster of this test's own: restarting the
    shared one would break every suite using it at the time.

    The workers reconnect (claims, outcome writes, heartbeats and the listener
    retry with backoff) and every job enqueued before or after the restart
    ends; none stays queued or running, none runs twice. A job may end failed
    as interrupted only if its runner's lease lapsed during the outage (a
    peer then failed its jobs and fenced its outcome write): such jobs are
    counted and each must have run exactly once.
    """
    pg_url = throwaway_pg.url
    began = time.monotonic()
    lease = 10.0
    with jobtable.Store.open(pg_url) as store:
        before = client(store).work.enqueue_many([0.05] * 300)
    workers = [spawner.start(pg_url, f"w{i}", workers=2, lease=lease) for i in (0, 1)]
    # Both have opened the store before the restart: a process that opens it
    # while the server is down exits with the StoreError, as it should.
    await wait_until(
        lambda: all("runner started" in w.log() for w in workers), limit=60, interval=0.05
    )
    await wait_until(lambda: count(pg_url, "succeeded") >= 20, limit=60, interval=0.05)
    in_flight = count(pg_url, "running")

    restart_began = time.monotonic()
    try:
        await asyncio.to_thread(throwaway_pg.restart, "fast")
    finally:
        await wait_for_server(pg_url)
    outage = time.monotonic() - restart_began
    done_at_restart = count(pg_url, "succeeded")

    # A store opened now: the parent's own pooled connections died with the server.
    with jobtable.Store.open(pg_url) as store:
        after = client(store).work.enqueue_many([0.05] * 40)
    every = before + after

    def all_finished() -> bool:
        return count(pg_url, "queued") + count(pg_url, "running") == 0

    await wait_until(all_finished, limit=60, interval=0.1)
    for worker in workers:
        assert worker.process.poll() is None, f"{worker.name} died:\n{worker.log()}"

    rows = {row[0]: row[1:] for row in select(pg_url, "SELECT id, status, error FROM jobs")}
    assert sorted(rows) == sorted(every), "exactly the enqueued jobs are stored"
    ran = runs(spawner)
    assert set(ran) <= set(every)
    twice = {job_id: pids for job_id, pids in ran.items() if len(pids) > 1}
    assert not twice, f"jobs that ran more than once: {twice}"
    interrupted = []
    for job_id in every:
        status, error = rows[job_id]
        if status == "failed":
            assert error == jobtable.MESSAGE_INTERRUPTED, (job_id, error)
            interrupted.append(job_id)
        else:
            assert status == "succeeded", (job_id, status)
        assert len(ran.get(job_id, [])) == 1, f"job {job_id} ran {ran.get(job_id)}"
    logs = spawner.logs()
    assert LISTEN_BACK in logs, "the listeners reconnected"
    assert RETRYING in logs, "some write failed during the outage and was retried"
    for worker in workers:
        await stop_gracefully(worker)
    print(
        f"restart took {outage:.1f} s with {in_flight} jobs in flight and {done_at_restart} "
        f"of {len(before)} done; {len(every)} jobs: {len(every) - len(interrupted)} succeeded, "
        f"{len(interrupted)} failed as interrupted (a lease of {lease} s lapsed); "
        f"test took {time.monotonic() - began:.1f} s"
    )


# 5. The LISTEN connection dropped.

_LISTENERS = (
    "SELECT pid FROM pg_stat_activity WHERE application_name = ? "
    "AND query LIKE ? AND pid <> pg_backend_pid()"
)
_LISTEN_QUERY = "%jobtable_listen()%"
"""What pg_stat_activity shows as the listener's query: its LISTEN runs inside jobtable_listen."""


def _listeners(pg_url: str, application_name: str) -> list[int]:
    return [row[0] for row in select(pg_url, _LISTENERS, application_name, _LISTEN_QUERY)]


def _drop_listen_connection(pg_url: str, application_name: str) -> str:
    """Makes listening fail and terminates the worker's LISTEN backends.

    Returns the definition of jobtable_listen, for ``_allow_listen``. While it
    is replaced, the worker's listener cannot listen again and keeps retrying
    with backoff, so the connection stays down until the test allows it.
    """
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_get_functiondef('jobtable_listen'::regproc)").fetchone()
        assert row is not None
        original: str = row[0]
        conn.execute(
            "CREATE OR REPLACE FUNCTION jobtable_listen() RETURNS text LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'fault test: listening is refused'; END $$"
        )
        terminated = conn.execute(
            _LISTENERS.replace("SELECT pid", "SELECT pg_terminate_backend(pid)").replace("?", "%s"),
            (application_name, _LISTEN_QUERY),
        ).fetchall()
    assert terminated, "the worker had no LISTEN connection to drop"
    return original


def _allow_listen(pg_url: str, original: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(original.encode())


async def test_jobs_start_by_polling_while_the_listen_connection_is_down(
    pg_url: str, spawner: Spawner, wait_until: WaitUntil
) -> None:
    """With its LISTEN connection terminated and refused, a worker still starts jobs by polling."""
    application_name = f"jobtable-fault-{secrets.token_hex(4)}"
    store = jobtable.Store.open(pg_url)
    try:
        parent = client(store)
        worker = spawner.start(
            with_query(pg_url, "application_name", application_name), "w", workers=1, poll=0.5
        )
        await wait_until(lambda: bool(_listeners(pg_url, application_name)), limit=60)
        original = _drop_listen_connection(pg_url, application_name)
        try:
            await wait_until(lambda: LISTEN_DOWN in worker.log(), limit=20)
            latencies = []
            for _ in range(3):
                _, latency = await start_latency(parent, wait_until)
                latencies.append(latency)
            assert LISTEN_BACK not in worker.log(), "LISTEN stayed down"
        finally:
            _allow_listen(pg_url, original)
        await wait_until(lambda: LISTEN_BACK in worker.log(), limit=20)
        await stop_gracefully(worker)
    finally:
        store.close()
    print(
        "LISTEN down, poll_interval 0.5 s: latencies "
        + ", ".join(f"{1000 * t:.0f} ms" for t in latencies)
    )


async def test_notifications_resume_after_the_listen_connection_is_dropped(
    pg_url: str, spawner: Spawner, wait_until: WaitUntil
) -> None:
    """A worker that polls only every 30 s gets its LISTEN connection back, and with it NOTIFY.

    A job enqueued while the connection is down waits (nothing wakes the
    worker), starts as soon as the listener is back (it wakes once for what
    it may have missed), and later jobs start within seconds: all well
    within 30 s of the worker's previous claim, so polling explains none.
    """
    poll = 30.0
    application_name = f"jobtable-fault-{secrets.token_hex(4)}"
    store = jobtable.Store.open(pg_url)
    try:
        parent = client(store)
        worker = spawner.start(
            with_query(pg_url, "application_name", application_name), "w", workers=1, poll=poll
        )
        await wait_until(lambda: bool(_listeners(pg_url, application_name)), limit=60)
        old_listeners = _listeners(pg_url, application_name)
        warm_up = parent.stamp.enqueue(0)
        await wait_until(
            lambda: parent.stamp.get(warm_up).status is jobtable.Status.SUCCEEDED, limit=30
        )
        # The worker claimed last just after the warm-up job finished.
        last_claim = time.monotonic()

        original = _drop_listen_connection(pg_url, application_name)
        try:
            await wait_until(lambda: LISTEN_DOWN in worker.log(), limit=20)
            missed = parent.stamp.enqueue(0)
            # Long enough that the listener's next try comes well after listening is allowed.
            await asyncio.sleep(2.0)
            assert parent.stamp.get(missed).status is jobtable.Status.QUEUED, (
                "nothing should wake a worker without its LISTEN connection"
            )
        finally:
            _allow_listen(pg_url, original)
        allowed_at = time.time()
        await wait_until(
            lambda: parent.stamp.get(missed).status is jobtable.Status.SUCCEEDED, limit=20
        )
        missed_started = parent.stamp.get(missed).result
        assert missed_started is not None
        assert time.monotonic() - last_claim < poll, "too slow to rule out polling"
        assert LISTEN_BACK in worker.log()
        new_listeners = _listeners(pg_url, application_name)
        assert new_listeners, "the worker listens again"
        assert not set(new_listeners) & set(old_listeners), "on a new connection"

        latencies = []
        for i in range(3):
            await asyncio.sleep(0.2 + 0.1 * i)
            _, latency = await start_latency(parent, wait_until)
            latencies.append(latency)
        assert time.monotonic() - last_claim < poll, "too slow to rule out polling"
        assert max(latencies) < 5.0, latencies
        await stop_gracefully(worker)
    finally:
        store.close()
    print(
        f"the missed job started {missed_started - allowed_at:.2f} s after listening was "
        "allowed again; then NOTIFY latencies " + ", ".join(f"{1000 * t:.1f} ms" for t in latencies)
    )
