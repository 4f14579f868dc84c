"""PostgreSQL under hostile conditions: its sessions ended under a running runner.

The runner's store opens with an application_name of the test's own, so
``pg_terminate_backend`` ends its sessions (pooled and listening) and no
other test's. Every handler counts its runs per job id, so a job run twice,
or never, shows; the jobs table is read at the end, so one lost or failed
shows too.
"""

import asyncio
import collections
import contextlib
import logging
import os
import pathlib
import re
import secrets
import threading
from collections.abc import Awaitable, Callable, Iterator

import pg_cluster
import psycopg
import pytest

import jobtable
from jobtable._engines.postgres.engine import APPLICATION_NAME, PostgresEngine
from jobtable._runner.completer import RETRIED_REFUSAL
from jobtable.db.postgres import schema_version

pytestmark = pytest.mark.postgres

WaitUntil = Callable[..., Awaitable[None]]

FENCED = "record job outcome: job is not running under this claim"


def named(url: str, app: str) -> str:
    """url, its connections named app in pg_stat_activity."""
    return f"{url}{'&' if '?' in url else '?'}application_name={app}"


def unique_app() -> str:
    """An application_name no other test's sessions have."""
    return f"jobtable-hostile-{secrets.token_hex(4)}"


def statuses(url: str) -> dict[str, tuple[str, int]]:
    """Every job of url's schema: its status and attempt, by id."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT id, status, attempt FROM jobs").fetchall()
    return {str(row[0]): (str(row[1]), int(row[2])) for row in rows}


class Killer:
    """A thread that ends every session named app, every period seconds, until stopped."""

    def __init__(self, url: str, app: str, period: float) -> None:
        self.url = url
        self.app = app
        self.period = period
        self.killed = 0
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="backend-killer", daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(self.period):
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s AND pid <> pg_backend_pid()",
                    (self.app,),
                ).fetchall()
                self.killed += sum(1 for (done,) in rows if done)
                self.rounds += 1

    @contextlib.contextmanager
    def running(self) -> Iterator["Killer"]:
        """Kills for the block; stops and joins the thread after."""
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(30)


def session_name(store: jobtable.Store) -> str:
    """The application_name of a pooled connection of store, as the server reports it."""
    engine = store.engine
    assert isinstance(engine, PostgresEngine)
    with engine._pool.connection() as conn:
        return str(conn.info.parameter_status("application_name"))


def test_the_engine_names_its_sessions(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its sessions are named jobtable; the URL's application_name, or PGAPPNAME, wins."""
    monkeypatch.delenv("PGAPPNAME", raising=False)
    app, from_environment = unique_app(), unique_app()
    with contextlib.closing(jobtable.Store.open(pg_url)) as store:
        assert session_name(store) == APPLICATION_NAME
    with contextlib.closing(jobtable.Store.open(named(pg_url, app))) as store:
        assert session_name(store) == app
        with psycopg.connect(pg_url, autocommit=True) as conn:
            (sessions,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
            ).fetchone() or (0,)
        assert sessions >= 1
    monkeypatch.setenv("PGAPPNAME", from_environment)
    with contextlib.closing(jobtable.Store.open(pg_url)) as store:
        assert session_name(store) == from_environment


# The workload: plain jobs, a limited queue's, and workflows whose jobs add others.


class Runs:
    """How many times each job's handler started, by job id."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def count(self, ctx: jobtable.JobContext[int]) -> None:
        self.counts[ctx.id] += 1


def workload(runner: jobtable.Runner, runs: Runs) -> dict[str, jobtable.Kind[int, int]]:
    """Registers the test's kinds on runner; their handlers count their runs in runs."""

    async def plain(ctx: jobtable.JobContext[int], payload: int) -> int:
        runs.count(ctx)
        await asyncio.sleep(0.002)
        return payload

    async def limited(ctx: jobtable.JobContext[int], payload: int) -> int:
        runs.count(ctx)
        await asyncio.sleep(0.002)
        return payload

    async def piece(ctx: jobtable.JobContext[int], payload: int) -> int:
        runs.count(ctx)
        return payload

    async def fan(ctx: jobtable.JobContext[int], payload: int) -> int:
        runs.count(ctx)
        parts = [ctx.workflow.add(kinds["piece"], payload + i) for i in range(3)]
        ctx.workflow.add(kinds["piece"], payload, after=parts)
        return payload

    kinds: dict[str, jobtable.Kind[int, int]] = {}
    kinds["plain"] = runner.register("plain", plain)
    kinds["limited"] = runner.register("limited", limited)
    kinds["piece"] = runner.register("piece", piece)
    kinds["fan"] = runner.register("fan", fan)
    return kinds


def enqueue_round(store: jobtable.Store, kinds: dict[str, jobtable.Kind[int, int]], n: int) -> None:
    """Enqueues plain jobs, limited ones, and a workflow of pieces, a fan-out and a fan-in."""
    kinds["plain"].enqueue_many(store, range(n, n + 6))
    kinds["limited"].enqueue_many(store, range(n, n + 2), queue="limited")
    wf = jobtable.Workflow(f"round-{n}")
    pieces = [wf.add(kinds["piece"], n + i) for i in range(4)]
    fanned = wf.add(kinds["fan"], n, after=pieces)
    wf.add(kinds["piece"], n, after=[fanned])
    wf.enqueue(store)


def check_every_job_ran_once(url: str, runs: Runs) -> None:
    """Every job of url succeeded, and its handler started exactly once."""
    jobs = statuses(url)
    assert jobs
    assert {job_id: status for job_id, (status, _) in jobs.items() if status != "succeeded"} == {}
    assert set(runs.counts) == set(jobs)
    assert {job_id: n for job_id, n in runs.counts.items() if n != 1} == {}


@pytest.mark.timeout(240)
async def test_sessions_ended_every_200_ms_lose_fail_and_repeat_no_job(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    """pg_terminate_backend on every session of the runner, five times a second, for 12 s.

    The runner retries each refused write, so every job succeeds, once;
    jobs keep finishing while the kills go on.
    """
    caplog.set_level(logging.INFO, logger="jobtable")
    app = unique_app()
    runs = Runs()
    with contextlib.closing(jobtable.Store.open(pg_url)) as store:
        runner_store = jobtable.Store.open(named(pg_url, app))
        runner = jobtable.Runner(
            runner_store,
            name="killed",
            queues={"default": 4, "limited": 2},
            flow=[jobtable.Queue("limited", concurrency=1)],
            poll_interval=0.05,
            lease=6.0,
        )
        kinds = workload(runner, runs)
        await runner.start()
        try:
            with Killer(pg_url, app, 0.2).running() as killer:
                loop = asyncio.get_running_loop()
                for n in range(0, 1200, 20):
                    await loop.run_in_executor(None, enqueue_round, store, kinds, n)
                    await asyncio.sleep(0.2)
                during = sum(runs.counts.values())
            await wait_until(
                lambda: all(s == "succeeded" for s, _ in statuses(pg_url).values()), limit=120
            )
        finally:
            runner.stop()
            await runner.wait()
            runner_store.close()
    assert killer.killed >= 20, (killer.killed, killer.rounds)
    assert during > 0, "no job finished while the sessions were being ended"
    check_every_job_ran_once(pg_url, runs)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and FENCED in r.msg]


# The outcome-and-claim write ended by the server at its claim.

KILL_CLAIMS = """
CREATE SEQUENCE claim_kills;
CREATE FUNCTION kill_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('application_name') = '{app}' AND nextval('claim_kills') % 2 = 0
            AND currval('claim_kills') <= {last} THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(10);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER kill_claim BEFORE UPDATE ON jobs FOR EACH ROW
    WHEN (OLD.status = 'queued' AND NEW.status = 'running') EXECUTE FUNCTION kill_claim();
"""


@pytest.mark.timeout(120)
async def test_a_session_ended_at_the_claim_after_a_workflow_outcome_loses_no_job(
    pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    """The claim that carries a workflow's outcomes is killed: the outcomes die with it.

    With one worker every claim but the first carries the outcome of the
    job before. A workflow's outcomes, their dependents' settling and the
    claim are one statement (FinishWorkflowJobs); the claim's update dies
    with AdminShutdown, a trigger ending its own session, as a backend kill
    would, and the whole statement with it. The runner stores the outcomes
    again, accepted this time: nothing is refused, nothing logged as fenced,
    and no job is lost or run twice.
    """
    caplog.set_level(logging.INFO, logger="jobtable")
    app = unique_app()
    runs = Runs()
    with contextlib.closing(jobtable.Store.open(pg_url)) as store:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(KILL_CLAIMS.format(app=app, last=8).encode())
        runner_store = jobtable.Store.open(named(pg_url, app))
        runner = jobtable.Runner(runner_store, name="killed", workers=1, poll_interval=0.05)
        kinds = workload(runner, runs)
        wf = jobtable.Workflow("pieces")
        pieces = [wf.add(kinds["piece"], i) for i in range(8)]
        wf.add(kinds["piece"], 8, after=pieces)
        wf.enqueue(store)
        await runner.start()
        try:
            await wait_until(
                lambda: all(s == "succeeded" for s, _ in statuses(pg_url).values()), limit=60
            )
        finally:
            runner.stop()
            await runner.wait()
            runner_store.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            (kills,) = conn.execute("SELECT last_value FROM claim_kills").fetchone() or (0,)
    assert kills >= 8
    check_every_job_ran_once(pg_url, runs)
    assert not [r for r in caplog.records if FENCED in r.getMessage()]
    assert not [r for r in caplog.records if r.msg == RETRIED_REFUSAL]


# Low timeouts set on the role.


@pytest.fixture
def timed_out_role(pg_url: str) -> Iterator[str]:
    """A URL of pg_url's schema as a new role whose statement and idle timeouts are 1 s.

    statement_timeout, idle_in_transaction_session_timeout and
    idle_session_timeout, set on the role as a managed service would.

    The role may create in the schema (its store makes the tables, as their
    owner). Roles are the cluster's: the name is unique, and the role, what
    it owns and its sessions are gone after the test.
    """
    role = f"jobtable_timeouts_{secrets.token_hex(4)}"
    schema = pg_url.rpartition("search_path%3D")[2].partition("&")[0]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN".encode())
        try:
            conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}".encode())
            for setting in (
                "statement_timeout",
                "idle_in_transaction_session_timeout",
                "idle_session_timeout",
            ):
                conn.execute(f"ALTER ROLE {role} SET {setting} = '1s'".encode())
            yield pg_url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
        finally:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (role,),
            )
            conn.execute(f"DROP OWNED BY {role}".encode())
            conn.execute(f"DROP ROLE {role}".encode())


@pytest.mark.timeout(120)
async def test_a_role_with_one_second_timeouts_runs_every_feature(
    timed_out_role: str, pg_url: str, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    """statement_timeout, idle_in_transaction_session_timeout, idle_session_timeout: 1 s.

    The store is made under them, a handler outlasts them, the runner idles
    past them, its listener waits past them, and a wait for a job's end too.
    """
    caplog.set_level(logging.INFO, logger="jobtable")
    with psycopg.connect(timed_out_role, autocommit=True) as conn:
        (shown,) = conn.execute("SHOW statement_timeout").fetchone() or ("",)
    assert shown == "1s"
    runs = Runs()
    with contextlib.closing(jobtable.Store.open(timed_out_role)) as store:
        runner = jobtable.Runner(
            store,
            name="timed",
            queues={"default": 4, "limited": 2},
            flow=[jobtable.Queue("limited", concurrency=1)],
            poll_interval=60.0,
        )
        kinds = workload(runner, runs)

        async def slow(ctx: jobtable.JobContext[int], payload: int) -> int:
            runs.count(ctx)
            await asyncio.sleep(2.5)
            return payload

        slow_kind = runner.register("slow", slow)
        await runner.start()
        try:
            enqueue_round(store, kinds, 0)
            slow_id = slow_kind.enqueue(7)
            loop = asyncio.get_running_loop()
            assert await loop.run_in_executor(None, lambda: slow_kind.wait(slow_id)) == 7
            await asyncio.sleep(2.5)  # every session idle past both timeouts
            enqueue_round(store, kinds, 100)
            # Well within the poll interval: the listener woke the runner.
            await wait_until(
                lambda: all(s == "succeeded" for s, _ in statuses(pg_url).values()), limit=20
            )
        finally:
            runner.stop()
            await runner.wait()
    check_every_job_ran_once(pg_url, runs)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_role_with_a_one_second_statement_timeout_opens_behind_a_longer_upgrade(
    timed_out_role: str, pg_url: str
) -> None:
    """Another process holds the schema's lock for 2.5 s, as a long upgrade would.

    The open waits for it, past the role's statement_timeout, instead of
    failing with it.
    """
    with psycopg.connect(pg_url) as holder:
        schema_version.Querier(holder).lock_schema()  # in holder's transaction
        timer = threading.Timer(2.5, holder.rollback)
        timer.start()
        try:
            with contextlib.closing(jobtable.Store.open(timed_out_role)) as store:
                assert store.counts() == {}
        finally:
            timer.join()


# A failover: the server comes back at another address behind the same name.

HOSTS = pathlib.Path("/etc/hosts")


@contextlib.contextmanager
def host_name(address: str) -> Iterator[tuple[str, Callable[[str], None]]]:
    """A made-up host name for address in /etc/hosts, and what points it at another address.

    Only the name's own line is written and, at the end, removed: the rest
    of the file is left as it is.
    """
    name = f"jobtable-failover-{secrets.token_hex(4)}.test"

    def point(to: str | None) -> None:
        kept = [line for line in HOSTS.read_text().splitlines() if not line.endswith(f" {name}")]
        HOSTS.write_text("\n".join(kept + ([f"{to} {name}"] if to else [])) + "\n")

    point(address)
    try:
        yield name, point
    finally:
        point(None)


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_failover_to_a_new_address_behind_the_same_name_loses_no_job(
    throwaway_pg: pg_cluster.Cluster, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    """The server stops, and starts on another address; the name is pointed at it.

    A runner and its store, opened by the name, go on without a restart:
    jobs running through the failover are recorded, jobs enqueued after it
    run, woken by the listener, which reconnected; each job runs once.
    """
    if not os.access(HOSTS, os.W_OK):
        pytest.skip("cannot point a host name here: /etc/hosts is not writable")
    caplog.set_level(logging.INFO, logger="jobtable")
    cluster = throwaway_pg
    runs = Runs()
    started = asyncio.Event()

    async def slow(ctx: jobtable.JobContext[int], payload: int) -> int:
        runs.count(ctx)
        started.set()
        await asyncio.sleep(2.0)
        return payload

    with host_name(cluster.address) as (name, point):
        by_name = cluster.url.replace(cluster.address, name, 1)
        store = jobtable.Store.open(by_name)
        runner = jobtable.Runner(
            store,
            name="failover",
            queues={"default": 4, "limited": 2},
            flow=[jobtable.Queue("limited", concurrency=1)],
            poll_interval=60.0,
        )
        kinds = workload(runner, runs)
        slow_kind = runner.register("slow", slow)
        await runner.start()
        try:
            enqueue_round(store, kinds, 0)
            slow_ids = slow_kind.enqueue_many(range(2))
            await asyncio.wait_for(started.wait(), 30)
            # The failover: the old address goes dark; the new one answers under the same name.
            await asyncio.to_thread(cluster.stop, "fast")
            cluster.address = "127.0.0.2"
            point(cluster.address)
            await asyncio.to_thread(cluster.start)
            await wait_until(lambda: all(slow_kind.get(i).result is not None for i in slow_ids))
            enqueue_round(store, kinds, 100)
            # Well within the poll interval: the listener, reconnected, woke the runner.
            await wait_until(
                lambda: all(s == "succeeded" for s, _ in statuses(cluster.url).values()), limit=30
            )
        finally:
            runner.stop()
            await runner.wait()
            store.close()
    check_every_job_ran_once(cluster.url, runs)
    assert any("listening for enqueues again" in r.getMessage() for r in caplog.records)


# A long transaction holding the xmin back.

DEAD_TUPLES = re.compile(
    r'vacuuming "[^"]*\.jobs".*'
    r"tuples: (\d+) removed, \d+ remain, (\d+) are dead but not yet removable",
    re.DOTALL,
)
"""What VACUUM VERBOSE says of the jobs table (not its TOAST table): rows removed, and kept."""


def vacuum_jobs(url: str) -> tuple[int, int]:
    """VACUUMs the jobs table of url; returns the dead rows it removed, and those it could not."""
    found: list[tuple[int, int]] = []

    def notice(diag: psycopg.errors.Diagnostic) -> None:
        match = DEAD_TUPLES.search(diag.message_primary or "")
        if match:
            found.append((int(match[1]), int(match[2])))

    with psycopg.connect(url, autocommit=True) as conn:
        conn.add_notice_handler(notice)
        conn.execute("VACUUM (VERBOSE) jobs")
    [counts] = found
    return counts


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_pinned_xmin_slows_no_job_and_its_dead_rows_go_after(
    throwaway_pg: pg_cluster.Cluster, wait_until: WaitUntil
) -> None:
    """A repeatable-read transaction holds the xmin while jobs of every kind run.

    Every job runs once meanwhile; vacuum can reclaim none of the rows they
    left dead until the transaction ends, and every one after. (A cluster
    of the test's own: no other test's transaction holds its xmin.)
    """
    url = throwaway_pg.url
    runs = Runs()
    with contextlib.closing(jobtable.Store.open(url)) as store:
        runner = jobtable.Runner(
            store,
            name="pinned",
            queues={"default": 4, "limited": 2},
            flow=[jobtable.Queue("limited", concurrency=1)],
            poll_interval=0.05,
        )
        kinds = workload(runner, runs)
        await runner.start()
        try:
            with psycopg.connect(url) as pin:
                pin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                pin.execute("SELECT count(*) FROM jobs").fetchone()
                for n in range(0, 300, 20):
                    enqueue_round(store, kinds, n)
                await wait_until(
                    lambda: all(s == "succeeded" for s, _ in statuses(url).values()), limit=60
                )
                _, kept = vacuum_jobs(url)
                pin.rollback()
        finally:
            runner.stop()
            await runner.wait()
    check_every_job_ran_once(url, runs)
    assert kept > len(runs.counts)  # at least a dead version of each job: its queued row
    # Once it ended, none is kept: vacuum removes what pruning on the pages' next
    # reads has not removed already.
    _, left = vacuum_jobs(url)
    assert left == 0
