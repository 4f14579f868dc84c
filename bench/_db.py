"""The databases the benchmark runs on, and the raw limit of their SQL.

A ``Database`` is one fresh SQLite file or PostgreSQL schema with jobtable's
schema applied (by ``jobtable.Store.open``, as an application would). Besides
the store's target it keeps a raw connection of the benchmark's own for setup
(resetting, bulk-loading finished rows, checking whether work is left) and for
the raw loops: the generated Querier's SQL constants (``jobtable.db.*.jobs``),
executed in a tight Python loop without the runner, at the same durability
as the store (SQLite WAL with synchronous=FULL; PostgreSQL with
synchronous_commit=on).
"""

import abc
import contextlib
import datetime
import secrets
import shutil
import sqlite3
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jobtable
from jobtable.db.postgres import jobs as pg_sql
from jobtable.db.sqlite import jobs as sqlite_sql

KIND = "noop"
PAYLOAD = '{"t":0.0}'
RESULT = "null"
RUNNER = "raw"
FILL_RUNNER = "bench-fill"
WAITING_KIND = "bench-waiting"
"""The kind of the queued jobs fill_finished adds beside the finished rows: scheduled
ones, due in a year, and ready ones of a lower priority than the measured jobs."""
WAITING = 10_000
"""How many of each kind of waiting job fill_finished adds."""
BATCH = 100
"""Jobs per transaction in the batched raw loops, and per enqueue_many call."""


def new_id() -> str:
    """A job id as the library makes them: 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


def utc_text() -> str:
    """The time as UTC text of fixed width, the form SQLite's rows hold."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sqlite_job() -> tuple[Any, ...]:
    """CreateJob's parameters for a ready job of the default queue."""
    now = utc_text()
    return (new_id(), KIND, "default", 0, PAYLOAD, 1, None, now, now, None)


def _sqlite_claim(max_jobs: int) -> tuple[Any, ...]:
    """ClaimNextJob's parameters."""
    return (RUNNER, utc_text(), "default", max_jobs)


class Database(abc.ABC):
    """A fresh database with jobtable's schema, its store target and a raw connection."""

    engine: str
    target: str
    store: jobtable.Store
    """The library's store on this database, opened before any raw connection (see create)."""

    @abc.abstractmethod
    def version(self) -> str:
        """The engine's version."""

    @abc.abstractmethod
    def pending(self) -> bool:
        """Whether any job is queued or running: read from the table."""

    @abc.abstractmethod
    def reset(self, keep_upto: int = 0) -> None:
        """Deletes every job whose seq is above keep_upto, and every runner row."""

    @abc.abstractmethod
    def max_seq(self) -> int:
        """The highest seq in the table, 0 when empty."""

    @abc.abstractmethod
    def fill_finished(self, count: int) -> None:
        """Bulk-loads count succeeded jobs, fast and not durably (setup only)."""

    @abc.abstractmethod
    def results(self, kind: str) -> list[str]:
        """The result texts of the finished jobs of kind."""

    def finished(self) -> int:
        """How many jobs succeeded or failed."""
        return self.count("succeeded") + self.count("failed")

    def failed(self) -> int:
        """How many jobs failed."""
        return self.count("failed")

    @abc.abstractmethod
    def count(self, status: str) -> int:
        """How many jobs have status."""

    @abc.abstractmethod
    def raw_work(self, batch: int) -> None:
        """Claims batch jobs one statement each and marks them succeeded, in one transaction."""

    @abc.abstractmethod
    def close(self) -> None:
        """Closes the connections and removes the database."""

    @abc.abstractmethod
    def reconnect(self) -> None:
        """Opens the raw connection anew, after the server dropped it."""

    # The raw loops. Each returns the seconds the timed part took.

    @abc.abstractmethod
    def raw_life(self, count: int, mode: str) -> float:
        """count job lives (insert, claim, succeed) with the store's SQL.

        mode "step" commits each statement, "life" each job life, "batch"
        BATCH job lives per transaction: BATCH inserts, one claim of BATCH
        jobs, BATCH successes (on PostgreSQL, pipelined). A claim per job
        in a batch costs more on PostgreSQL: each one walks past the index
        entries of the rows the transaction already claimed.
        """

    @abc.abstractmethod
    def raw_insert(self, count: int, batch: int) -> float:
        """count inserts of queued jobs, batch per transaction (1: each its own)."""

    @abc.abstractmethod
    def raw_claim(self, count: int, batch: int) -> float:
        """count claims of one job each, batch per transaction.

        The jobs are inserted first, untimed.
        """

    @abc.abstractmethod
    def raw_cycle(self, count: int, size: int) -> float:
        """count jobs through claim and finish, size a transaction, as size workers batch.

        The jobs are inserted first, untimed, as the end-to-end runs enqueue
        them. Each transaction finishes the size jobs the one before claimed
        and claims size more: the most a runner of size workers, all freed at
        once, can put in one commit without claiming ahead of its workers.
        """

    @abc.abstractmethod
    def raw_start_latency(self, count: int) -> list[float]:
        """Seconds from before an insert's commit to after the claim that returns it, per job."""

    def raw_life_threads(self, count: int, connections: int) -> float:
        """raw_life(count, "batch") split over connections at once, where writers can overlap."""
        raise NotImplementedError


class SQLiteDatabase(Database):
    engine = "sqlite"

    def __init__(self, store: jobtable.Store, path: Path, owned: Path | None) -> None:
        """Connects to the database at path; close removes the folder owned, if any.

        store must be open already: Store.open reads the file's header with a
        plain open() and close(), which drops every POSIX lock this process
        holds on the file, those of a raw connection opened earlier included.
        """
        self.store = store
        self._dir = owned
        self.path = path
        self.target = str(path)
        self._conn = self._connect("FULL")

    @classmethod
    def create(cls, *, durable: bool = True) -> "SQLiteDatabase":
        """A new database file in a new temporary folder.

        Not durable, both the store and the raw connection run with
        synchronous=NORMAL: no commit waits for an fsync, so what is left
        is the CPU's cost (for bench._ab and bench._breakdown).
        """
        folder = Path(tempfile.mkdtemp(prefix="jobtable-bench-"))
        path = folder / "bench.db"
        db = cls(jobtable.Store.open(path, durable=durable), path, folder)
        if not durable:
            db._conn.close()
            db._conn = db._connect("NORMAL")
        return db

    def _connect(self, synchronous: str) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    def version(self) -> str:
        return sqlite3.sqlite_version

    def pending(self) -> bool:
        row = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'queued' AND kind <> ?)"
            " OR EXISTS (SELECT 1 FROM jobs WHERE status = 'running' AND kind <> ?)",
            (WAITING_KIND, WAITING_KIND),
        ).fetchall()[0]
        return bool(row[0])

    def reset(self, keep_upto: int = 0) -> None:
        self._conn.execute("DELETE FROM jobs WHERE seq > ?", (keep_upto,))
        # A run may reach the lower-priority waiting jobs once its own are done.
        self._conn.execute(
            "UPDATE jobs SET status = 'queued', error = NULL, errors = '[]', runner = NULL,"
            " attempt = 0, finished_at = NULL WHERE kind = ? AND status <> 'queued'",
            (WAITING_KIND,),
        )
        self._conn.execute("DELETE FROM runners")

    def max_seq(self) -> int:
        value = self._conn.execute("SELECT coalesce(max(seq), 0) FROM jobs").fetchall()[0][0]
        return int(value)

    def fill_finished(self, count: int) -> None:
        conn = self._connect("OFF")
        stamp = utc_text()
        try:
            done = 0
            while done < count:
                chunk = min(200_000, count - done)
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO jobs (id, kind, status, payload, result, runner, attempt,"
                    " run_at, created_at, started_at, finished_at, updated_at)"
                    " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
                    " SELECT lower(hex(randomblob(16))), ?, 'succeeded', ?, ?, ?, 1,"
                    " ?, ?, ?, ?, ? FROM n",
                    (chunk, KIND, PAYLOAD, RESULT, FILL_RUNNER, *[stamp] * 5),
                )
                conn.execute("COMMIT")
                done += chunk
            if not conn.execute(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = ?)", (WAITING_KIND,)
            ).fetchone()[0]:
                later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=365)
                soon = later.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                conn.execute("BEGIN IMMEDIATE")
                for priority, run_at, scheduled in ((0, soon, 1), (1, stamp, 0)):
                    conn.execute(
                        "INSERT INTO jobs (id, kind, priority, payload, run_at, scheduled,"
                        " created_at, updated_at)"
                        " WITH RECURSIVE n(i) AS"
                        " (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
                        " SELECT lower(hex(randomblob(16))), ?, ?, ?, ?, ?, ?, ? FROM n",
                        (WAITING, WAITING_KIND, priority, PAYLOAD, run_at, scheduled, stamp, stamp),
                    )
                conn.execute("COMMIT")
        finally:
            conn.close()

    def results(self, kind: str) -> list[str]:
        rows = self._conn.execute(
            "SELECT result FROM jobs WHERE kind = ? AND status = 'succeeded'", (kind,)
        ).fetchall()
        return [str(row[0]) for row in rows]

    def count(self, status: str) -> int:
        row = self._conn.execute(
            "SELECT count(*) FROM jobs WHERE status = ? AND kind <> ?", (status, WAITING_KIND)
        ).fetchall()[0]
        return int(row[0])

    def raw_work(self, batch: int) -> None:
        execute = self._conn.execute
        execute("BEGIN IMMEDIATE")
        claimed = [
            execute(sqlite_sql.CLAIM_NEXT_JOB, _sqlite_claim(1)).fetchall() for _ in range(batch)
        ]
        for rows in claimed:
            for row in rows:
                execute(sqlite_sql.SUCCEED_JOB, (RESULT, utc_text(), row[1], row[4]))
        execute("COMMIT")

    def reconnect(self) -> None:
        self._conn.close()
        self._conn = self._connect("FULL")

    def close(self) -> None:
        self._conn.close()
        self.store.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def raw_life(self, count: int, mode: str) -> float:
        execute = self._conn.execute
        insert, claim, succeed = (
            sqlite_sql.CREATE_JOB,
            sqlite_sql.CLAIM_NEXT_JOB,
            sqlite_sql.SUCCEED_JOB,
        )
        start = time.perf_counter()
        if mode == "step":
            for _ in range(count):
                execute(insert, _sqlite_job())
                job_id, attempt = execute(claim, _sqlite_claim(1)).fetchall()[0][1:5:3]
                execute(succeed, (RESULT, utc_text(), job_id, attempt))
        elif mode == "life":
            for _ in range(count):
                execute("BEGIN IMMEDIATE")
                execute(insert, _sqlite_job())
                job_id, attempt = execute(claim, _sqlite_claim(1)).fetchall()[0][1:5:3]
                execute(succeed, (RESULT, utc_text(), job_id, attempt))
                execute("COMMIT")
        else:
            for done in range(0, count, BATCH):
                size = min(BATCH, count - done)
                execute("BEGIN IMMEDIATE")
                for _ in range(size):
                    execute(insert, _sqlite_job())
                claimed = execute(claim, _sqlite_claim(size)).fetchall()
                for row in claimed:
                    execute(succeed, (RESULT, utc_text(), row[1], row[4]))
                execute("COMMIT")
        return time.perf_counter() - start

    def _inserts(self, count: int, batch: int) -> None:
        execute = self._conn.execute
        for done in range(0, count, batch):
            size = min(batch, count - done)
            if batch > 1:
                execute("BEGIN IMMEDIATE")
            for _ in range(size):
                execute(sqlite_sql.CREATE_JOB, _sqlite_job())
            if batch > 1:
                execute("COMMIT")

    def raw_insert(self, count: int, batch: int) -> float:
        start = time.perf_counter()
        self._inserts(count, batch)
        return time.perf_counter() - start

    def raw_cycle(self, count: int, size: int) -> float:
        self._inserts(count, 1000)
        execute = self._conn.execute
        claim, succeed = sqlite_sql.CLAIM_NEXT_JOB, sqlite_sql.SUCCEED_JOB
        start = time.perf_counter()
        running: list[Any] = []
        while True:
            execute("BEGIN IMMEDIATE")
            for row in running:
                execute(succeed, (RESULT, utc_text(), row[1], row[4]))
            running = execute(claim, _sqlite_claim(size)).fetchall()
            execute("COMMIT")
            if not running:
                break
        return time.perf_counter() - start

    def raw_claim(self, count: int, batch: int) -> float:
        self._inserts(count, 1000)
        execute = self._conn.execute
        claim = sqlite_sql.CLAIM_NEXT_JOB
        start = time.perf_counter()
        for done in range(0, count, batch):
            size = min(batch, count - done)
            if batch > 1:
                execute("BEGIN IMMEDIATE")
            for _ in range(size):
                execute(claim, _sqlite_claim(1)).fetchall()[0]
            if batch > 1:
                execute("COMMIT")
        return time.perf_counter() - start

    def raw_start_latency(self, count: int) -> list[float]:
        execute = self._conn.execute
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            execute(sqlite_sql.CREATE_JOB, _sqlite_job())
            execute(sqlite_sql.CLAIM_NEXT_JOB, _sqlite_claim(1)).fetchall()[0]
            samples.append(time.perf_counter() - start)
        return samples


def _pg_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


# The runner claims and finishes with one query on PostgreSQL, FinishAndClaimJobs;
# the raw loops run it too, claiming with no outcomes and finishing with no claim.
# Its rows are (finished, seq, id, kind, payload, attempt, max_attempts, timeout, priority).


def _pg_params(rows: list[Any], max_jobs: int) -> dict[str, Any]:
    """FinishAndClaimJobs's parameters: rows (claimed rows) succeed, then max_jobs are claimed."""
    return {
        "ids": [row[2] for row in rows],
        "attempts": [row[5] for row in rows],
        "states": ["succeeded"] * len(rows),
        "results": [RESULT] * len(rows),
        "errors": [None] * len(rows),
        "run_ats": [None] * len(rows),
        "queue": "default",
        "runner": RUNNER,
        "now": _pg_now(),
        "max_jobs": max_jobs,
    }


def _pg_job() -> dict[str, Any]:
    """CreateJob's parameters for a ready job of the default queue."""
    now = _pg_now()
    return {
        "id": new_id(),
        "kind": KIND,
        "queue": "default",
        "priority": 0,
        "payload": PAYLOAD,
        "max_attempts": 1,
        "timeout": None,
        "run_at": now,
        "now": now,
        "traceparent": None,
    }


class PostgresDatabase(Database):
    engine = "postgres"

    def __init__(
        self,
        store: jobtable.Store,
        target: str,
        *,
        admin: Any = None,
        schema: str = "",
        base_url: str = "",
    ) -> None:
        """Connects to target; close drops schema through admin (or base_url), when given."""
        import psycopg

        self._psycopg = psycopg
        self.store = store
        self._base_url = base_url
        self.target = target
        self.schema = schema
        self._admin = admin
        self._conn = self._connect()

    @classmethod
    def create(cls, url: str) -> "PostgresDatabase":
        """A new schema of its own on the server at url, named in the target's search_path."""
        import psycopg

        schema = f"jobtable_bench_{secrets.token_hex(4)}"
        admin = psycopg.connect(url, autocommit=True, connect_timeout=5)
        try:
            admin.execute(f'CREATE SCHEMA "{schema}"')
            options = urllib.parse.quote(f"-csearch_path={schema}")
            target = f"{url}{'&' if '?' in url else '?'}options={options}"
            return cls(
                jobtable.Store.open(target), target, admin=admin, schema=schema, base_url=url
            )
        except BaseException:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            admin.close()
            raise

    def _connect(self) -> Any:
        return self._psycopg.connect(self.target, autocommit=True)

    def version(self) -> str:
        row = self._conn.execute("SHOW server_version").fetchone()
        return str(row[0]).split()[0]

    def pending(self) -> bool:
        row = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'queued' AND kind <> %s)"
            " OR EXISTS (SELECT 1 FROM jobs WHERE status = 'running' AND kind <> %s)",
            (WAITING_KIND, WAITING_KIND),
        ).fetchone()
        return bool(row[0])

    def reset(self, keep_upto: int = 0) -> None:
        self._conn.execute("DELETE FROM jobs WHERE seq > %s", (keep_upto,))
        # A run may reach the lower-priority waiting jobs once its own are done.
        self._conn.execute(
            "UPDATE jobs SET status = 'queued', error = NULL, errors = '[]', runner = NULL,"
            " attempt = 0, finished_at = NULL WHERE kind = %s AND status <> 'queued'",
            (WAITING_KIND,),
        )
        self._conn.execute("DELETE FROM runners")
        self._conn.execute("VACUUM ANALYZE jobs")

    def max_seq(self) -> int:
        row = self._conn.execute("SELECT coalesce(max(seq), 0) FROM jobs").fetchone()
        return int(row[0])

    def fill_finished(self, count: int) -> None:
        conn = self._connect()
        try:
            done = 0
            while done < count:
                chunk = min(200_000, count - done)
                with conn.transaction():
                    conn.execute("SET LOCAL synchronous_commit = off")
                    conn.execute(
                        "INSERT INTO jobs (id, kind, status, payload, result, runner, attempt,"
                        " run_at, created_at, started_at, finished_at, updated_at)"
                        " SELECT md5(random()::text || g::text), %s, 'succeeded', %s, %s, %s, 1,"
                        " now(), now(), now(), now(), now() FROM generate_series(1, %s) AS g",
                        (KIND, PAYLOAD, RESULT, FILL_RUNNER, chunk),
                    )
                done += chunk
            waiting = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = %s)", (WAITING_KIND,)
            ).fetchone()[0]
            if not waiting:
                for priority, delay, scheduled in ((0, "1 year", True), (1, "0", False)):
                    conn.execute(
                        "INSERT INTO jobs (id, kind, priority, payload, run_at, scheduled,"
                        " created_at, updated_at)"
                        " SELECT md5(random()::text || g::text), %s, %s, %s,"
                        " now() + %s::interval, %s, now(), now() FROM generate_series(1, %s) AS g",
                        (WAITING_KIND, priority, PAYLOAD, delay, scheduled, WAITING),
                    )
            # What autovacuum would have done by the time a table holds this many rows.
            conn.execute("VACUUM ANALYZE jobs")
        finally:
            conn.close()

    def results(self, kind: str) -> list[str]:
        rows = self._conn.execute(
            "SELECT result FROM jobs WHERE kind = %s AND status = 'succeeded'", (kind,)
        ).fetchall()
        return [str(row[0]) for row in rows]

    def count(self, status: str) -> int:
        row = self._conn.execute(
            "SELECT count(*) FROM jobs WHERE status = %s AND kind <> %s", (status, WAITING_KIND)
        ).fetchone()
        return int(row[0])

    def raw_work(self, batch: int) -> None:
        execute = self._conn.execute
        execute("BEGIN")
        claimed = [
            execute(pg_sql.FINISH_AND_CLAIM_JOBS, _pg_params([], 1)).fetchone()
            for _ in range(batch)
        ]
        for row in claimed:
            if row is not None:
                execute(pg_sql.FINISH_AND_CLAIM_JOBS, _pg_params([row], 0))
        execute("COMMIT")

    def reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = self._connect()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        with contextlib.suppress(Exception):
            self.store.close()
        if self._admin is None:
            return
        drop = f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'
        try:
            self._admin.execute(drop)
        except self._psycopg.Error:  # the server dropped the connection: again, anew
            drop_anew(self._base_url, drop)
        finally:
            self._admin.close()

    def _life(self, conn: Any, count: int, mode: str) -> None:
        execute = conn.execute
        insert, claim = pg_sql.CREATE_JOB, pg_sql.FINISH_AND_CLAIM_JOBS

        def one_life() -> None:
            execute(insert, _pg_job())
            row = execute(claim, _pg_params([], 1)).fetchone()
            execute(claim, _pg_params([row], 0))

        if mode == "step":
            for _ in range(count):
                one_life()
        elif mode == "life":
            for _ in range(count):
                execute("BEGIN")
                one_life()
                execute("COMMIT")
        else:
            # Pipelined: the statements of a transaction go out without waiting
            # for each reply, with one wait for the claim's rows before the
            # statement that finishes them. The fastest this SQL can go.
            for done in range(0, count, BATCH):
                size = min(BATCH, count - done)
                with conn.pipeline() as pipeline:
                    execute("BEGIN")
                    for _ in range(size):
                        execute(
                            insert,
                            _pg_job(),
                        )
                    cursor = execute(claim, _pg_params([], size))
                    pipeline.sync()
                    execute(claim, _pg_params(cursor.fetchall(), 0))
                    execute("COMMIT")

    def raw_life(self, count: int, mode: str) -> float:
        start = time.perf_counter()
        self._life(self._conn, count, mode)
        return time.perf_counter() - start

    def raw_life_threads(self, count: int, connections: int) -> float:
        conns = [self._connect() for _ in range(connections)]
        try:
            elapsed = run_threads(
                connections, lambda i, share: self._life(conns[i], share, "batch"), count
            )
        finally:
            for conn in conns:
                conn.close()
        return elapsed * count / (count // connections * connections)

    def _inserts(self, count: int, batch: int) -> None:
        conn = self._conn
        execute = conn.execute
        for done in range(0, count, batch):
            size = min(batch, count - done)
            if batch == 1:
                execute(
                    pg_sql.CREATE_JOB,
                    _pg_job(),
                )
                continue
            with conn.pipeline():
                execute("BEGIN")
                for _ in range(size):
                    execute(
                        pg_sql.CREATE_JOB,
                        _pg_job(),
                    )
                execute("COMMIT")

    def raw_insert(self, count: int, batch: int) -> float:
        start = time.perf_counter()
        self._inserts(count, batch)
        return time.perf_counter() - start

    def raw_cycle(self, count: int, size: int) -> float:
        self._inserts(count, 1000)
        execute = self._conn.execute
        start = time.perf_counter()
        running: list[Any] = []
        while True:
            # One statement, as the runner's claimer sends it.
            running = execute(pg_sql.FINISH_AND_CLAIM_JOBS, _pg_params(running, size)).fetchall()
            running = [row for row in running if not row[0]]
            if not running:
                break
        return time.perf_counter() - start

    def raw_claim(self, count: int, batch: int) -> float:
        self._inserts(count, 1000)
        conn = self._conn
        execute = conn.execute
        claim = pg_sql.FINISH_AND_CLAIM_JOBS
        start = time.perf_counter()
        for done in range(0, count, batch):
            size = min(batch, count - done)
            if batch == 1:
                execute(claim, _pg_params([], 1)).fetchone()
                continue
            with conn.pipeline():
                execute("BEGIN")
                cursors = [execute(claim, _pg_params([], 1)) for _ in range(size)]
                execute("COMMIT")
            for cursor in cursors:
                cursor.fetchone()
        return time.perf_counter() - start

    def raw_start_latency(self, count: int) -> list[float]:
        execute = self._conn.execute
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            execute(
                pg_sql.CREATE_JOB,
                _pg_job(),
            )
            execute(pg_sql.FINISH_AND_CLAIM_JOBS, _pg_params([], 1)).fetchone()
            samples.append(time.perf_counter() - start)
        return samples


PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def drop_anew(url: str, drop: str, tries: int = 60) -> None:
    """Runs drop on a new connection to url, trying for up to a minute.

    Other test suites restart the shared server at times; a benchmark that
    lost its connection still removes what it created.
    """
    import psycopg

    for attempt in range(tries):
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
                admin.execute(drop)
            return
        except psycopg.OperationalError:
            if attempt == tries - 1:
                raise
            time.sleep(1)


def create(engine: str, pg_url: str = PG_URL) -> Database:
    """A fresh database of engine; raises for an unreachable PostgreSQL server."""
    if engine == "sqlite":
        return SQLiteDatabase.create()
    return PostgresDatabase.create(pg_url)


def attach(engine: str, target: str) -> Database:
    """The database another process created at target; close leaves it in place."""
    store = jobtable.Store.open(target)
    if engine == "sqlite":
        return SQLiteDatabase(store, Path(target), None)
    return PostgresDatabase(store, target)


def run_threads(threads: int, work: Callable[[int, int], None], count: int) -> float:
    """Seconds for threads threads to run work(index, share) at once, share = count // threads.

    The clock runs from a barrier every thread has reached, started untimed
    before it, until the last one returns; the first error a thread raised
    is raised here.
    """
    share = count // threads
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        barrier.wait()
        try:
            work(index, share)
        except BaseException as err:
            errors.append(err)

    pool = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    begin = time.perf_counter()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - begin
    if errors:
        raise errors[0]
    return elapsed


def timed(fn: Callable[[], object]) -> float:
    """Seconds fn took."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def redacted(url: str) -> str:
    """url without any password, to print."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
