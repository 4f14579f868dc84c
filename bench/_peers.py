"""jobtable beside its peers on one workload: ``python -m bench --peers`` (``make bench-peers``).

The peers are huey (SqliteHuey), procrastinate and pgqueuer (asyncpg and
psycopg drivers), installed by the ``bench`` extra. Each runs with its own
defaults and its own worker; only the worker count is set. In every round
each queue runs once, in turn, the same workload of N no-op jobs:

- enqueue N one job a call, then drain them with 1 worker: the enqueue rate,
  the 1-worker drain rate and end to end (N / both times);
- enqueue N 100 a call (where the queue has a batch form; otherwise one a
  call, untimed) and drain them with 4 workers, then the same with 16;
- on SQLite, enqueue N one job a call from 8 and from 32 threads at once.

"Workers" is each queue's own concurrency: jobtable's ``workers``, huey's
consumer threads, procrastinate's ``concurrency``, and pgqueuer's
``batch_size`` (jobs a dequeue picks; each runs as a task of its own, with
no concurrency limit, pgqueuer's default). pgqueuer's other knob, an
entrypoint's ``concurrency_limit``, serializes the dequeues: at 1 it ran 9
jobs/s here, each dequeue waiting out its 0.1 s poll interval. A drain is timed
from the worker's start until the queue says it is done: jobtable's table
holds no queued or running job, huey has signalled every task complete,
procrastinate's ``wait=False`` worker and pgqueuer's ``drain`` mode return.

Each peer gets a database of its own: a temporary SQLite file, or a
PostgreSQL database ``jobtable_peer_<hex>`` created on the server and dropped
after (jobtable uses a schema, as ``make bench`` does).
"""

import abc
import asyncio
import contextlib
import importlib.metadata
import secrets
import shutil
import signal
import sqlite3
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench import _db
from bench._jobs import Ping, make_runner
from bench._stats import Figure, Table, cell
from bench._suite import CONCURRENT_THREADS, PAYLOADS, _wait_done, log

WORKERS = (1, 4, 16)

PEER_PACKAGES = ("huey", "procrastinate", "pgqueuer", "asyncpg")


def versions() -> list[tuple[str, str]]:
    """The installed version of each peer package, or "not installed"."""
    found = []
    for name in PEER_PACKAGES:
        try:
            found.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            found.append((name, "not installed"))
    return found


class Queue(abc.ABC):
    """One queue on a database of its own, driven through its own API."""

    label: str
    engine: str

    @abc.abstractmethod
    def enqueue_one(self, count: int) -> float:
        """Seconds to enqueue count no-op jobs one a call; they stay queued."""

    def enqueue_batch(self, count: int) -> float | None:
        """Seconds to enqueue count jobs 100 a call, or None without a batch form.

        Without one, the jobs are enqueued one a call, untimed.
        """
        self.enqueue_one(count)
        return None

    @abc.abstractmethod
    def drain(self, count: int, workers: int) -> float:
        """Seconds for a worker of workers to run the count queued jobs."""

    def enqueue_threads(self, count: int, threads: int) -> float | None:
        """Seconds to enqueue count jobs one a call from threads threads; None if not measured."""
        return None

    @abc.abstractmethod
    def clear(self) -> None:
        """Removes every job."""

    @abc.abstractmethod
    def close(self) -> None:
        """Closes the queue and removes its database."""


# jobtable.


class Jobtable(Queue):
    """jobtable on a fresh SQLite file or PostgreSQL schema, as ``make bench`` uses."""

    def __init__(self, engine: str, pg_url: str, *, durable: bool = True) -> None:
        self.engine = engine
        self.label = "jobtable"
        self.db: _db.Database = (
            _db.create(engine, pg_url) if durable else _db.SQLiteDatabase.create(durable=False)
        )
        self.kinds = make_runner(self.db.store, workers=1, name="bench-peers-enqueuer")

    def enqueue_one(self, count: int) -> float:
        enqueue, payload = self.kinds.noop.enqueue, Ping()
        begin = time.perf_counter()
        for _ in range(count):
            enqueue(payload)
        return time.perf_counter() - begin

    def enqueue_batch(self, count: int) -> float:
        begin = time.perf_counter()
        for _ in range(count // _db.BATCH):
            self.kinds.noop.enqueue_many(PAYLOADS)
        return time.perf_counter() - begin

    async def _drain(self, count: int, workers: int) -> float:
        kinds = make_runner(self.db.store, workers=workers, name=f"bench-peers-w{workers}")
        started = kinds.expect(count)
        begin = time.perf_counter()
        await kinds.runner.start()
        await _wait_done(self.db, started)
        elapsed = time.perf_counter() - begin
        kinds.runner.stop()
        await kinds.runner.wait()
        return elapsed

    def drain(self, count: int, workers: int) -> float:
        return asyncio.run(self._drain(count, workers))

    def enqueue_threads(self, count: int, threads: int) -> float:
        enqueue, payload = self.kinds.noop.enqueue, Ping()

        def work(share: int) -> None:
            for _ in range(share):
                enqueue(payload)

        return _db.run_threads(threads, lambda _, share: work(share), count)

    def clear(self) -> None:
        self.db.reset()

    def close(self) -> None:
        self.db.close()


# huey.


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    """Restores the signal handlers a huey consumer replaces when it starts."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


class Huey(Queue):
    """SqliteHuey on a temporary file, its defaults kept (WAL; no synchronous set).

    With store_result the task returns a value, which huey stores; a task
    returning None stores nothing, and huey deletes a task's row when it
    dequeues it: it does less work per job than jobtable, which keeps every
    job's row and its outcome.
    """

    engine = "sqlite"

    def __init__(self, *, store_result: bool) -> None:
        from huey import SqliteHuey
        from huey import signals as huey_signals

        self.label = "huey, result stored" if store_result else "huey"
        self._dir = Path(tempfile.mkdtemp(prefix="jobtable-bench-huey-"))
        self.path = self._dir / "huey.db"
        self.huey = SqliteHuey("bench", filename=str(self.path))
        self._done = 0
        self._expected = 0
        self._all_done = threading.Event()
        self._lock = threading.Lock()

        def noop() -> object:
            return 1 if store_result else None

        self.task = self.huey.task(name="noop")(noop)

        def completed(signal_name: str, task: object) -> None:
            with self._lock:
                self._done += 1
                if self._done >= self._expected:
                    self._all_done.set()

        self.huey.signal(huey_signals.SIGNAL_COMPLETE)(completed)

    def synchronous(self) -> int:
        """huey's connection's PRAGMA synchronous (2: FULL, as jobtable's durable store)."""
        value = self.huey.storage.sql("PRAGMA synchronous", results=True)[0][0]
        return int(value)

    def enqueue_one(self, count: int) -> float:
        task = self.task
        begin = time.perf_counter()
        for _ in range(count):
            task()
        return time.perf_counter() - begin

    def drain(self, count: int, workers: int) -> float:
        with self._lock:
            self._done, self._expected = 0, count
            self._all_done.clear()
        consumer = self.huey.create_consumer(workers=workers, worker_type="thread")
        with _signals_kept():
            begin = time.perf_counter()
            consumer.start()
            finished = self._all_done.wait(_suite_deadline())
            elapsed = time.perf_counter() - begin
            consumer.stop(graceful=True)
        if not finished:
            raise TimeoutError(f"huey ran {self._done} of {count} tasks")
        return elapsed

    def enqueue_threads(self, count: int, threads: int) -> float:
        task = self.task

        def work(share: int) -> None:
            for _ in range(share):
                task()

        return _db.run_threads(threads, lambda _, share: work(share), count)

    def clear(self) -> None:
        self.huey.flush()

    def close(self) -> None:
        self.huey.storage.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def _suite_deadline() -> float:
    from bench._suite import DEADLINE

    return DEADLINE


# PostgreSQL peers: a database each.


class _PgDatabase:
    """A throwaway database on the server, dropped by close."""

    def __init__(self, url: str, prefix: str) -> None:
        import psycopg

        self.name = f"jobtable_peer_{prefix}_{secrets.token_hex(4)}"
        self._server = url
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'CREATE DATABASE "{self.name}"')
        parts = urllib.parse.urlsplit(url)
        self.url = urllib.parse.urlunsplit(parts._replace(path=f"/{self.name}"))
        self.conn = psycopg.connect(self.url, autocommit=True)

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        _db.drop_anew(self._server, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class _OnPostgres(Queue):
    """A peer on a database of its own, emptied with clear_sql."""

    engine = "postgres"
    db: _PgDatabase
    clear_sql: str

    def clear(self) -> None:
        self.db.execute(self.clear_sql)

    def close(self) -> None:
        self.db.close()


class Procrastinate(_OnPostgres):
    """procrastinate with its psycopg connector and its defaults.

    It keeps every job's row, as jobtable does, and also an event row per
    status change (procrastinate_events): more work per job.
    """

    label = "procrastinate"
    clear_sql = "TRUNCATE procrastinate_jobs CASCADE"

    def __init__(self, url: str) -> None:
        import procrastinate

        self.db = _PgDatabase(url, "procrastinate")
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=self.db.url))

        async def noop() -> None:
            return None

        self.task = self.app.task(name="noop")(noop)
        asyncio.run(self._in_app(self.app.schema_manager.apply_schema_async))

    async def _in_app(self, fn: Callable[[], Any]) -> Any:
        async with self.app.open_async():
            return await fn()

    def enqueue_one(self, count: int) -> float:
        async def run() -> float:
            defer = self.task.defer_async
            begin = time.perf_counter()
            for _ in range(count):
                await defer()
            return time.perf_counter() - begin

        return float(asyncio.run(self._in_app(run)))

    def enqueue_batch(self, count: int) -> float:
        async def run() -> float:
            payloads: list[dict[str, Any]] = [{} for _ in range(_db.BATCH)]
            begin = time.perf_counter()
            for _ in range(count // _db.BATCH):
                await self.task.batch_defer_async(*payloads)
            return time.perf_counter() - begin

        return float(asyncio.run(self._in_app(run)))

    def drain(self, count: int, workers: int) -> float:
        async def run() -> float:
            begin = time.perf_counter()
            await self.app.run_worker_async(concurrency=workers, wait=False)
            return time.perf_counter() - begin

        return float(asyncio.run(self._in_app(run)))


class PgQueuer(_OnPostgres):
    """pgqueuer with the asyncpg or the psycopg driver and its defaults.

    It deletes a job's row when the job finishes (keeping a log row per
    status change in pgqueuer_log): less work per job than jobtable, whose
    finished rows stay.
    """

    clear_sql = "TRUNCATE pgqueuer, pgqueuer_log"

    def __init__(self, url: str, driver: str) -> None:
        self.label = f"pgqueuer ({driver})"
        self.driver = driver
        self.db = _PgDatabase(url, f"pgqueuer_{driver}")
        asyncio.run(self._with_queries(lambda q: q.install()))

    async def _connect(self) -> tuple[Any, Callable[[], Any]]:
        """A pgqueuer driver on a new connection, and the coroutine function that closes it."""
        from pgqueuer import AsyncpgDriver, PsycopgDriver

        if self.driver == "asyncpg":
            import asyncpg

            conn = await asyncpg.connect(self.db.url)
            return AsyncpgDriver(conn), conn.close
        import psycopg

        aconn = await psycopg.AsyncConnection.connect(self.db.url, autocommit=True)
        return PsycopgDriver(aconn), aconn.close

    async def _with_queries(self, fn: Callable[[Any], Any]) -> Any:
        from pgqueuer import Queries

        driver, close = await self._connect()
        try:
            return await fn(Queries(driver))
        finally:
            await close()

    def enqueue_one(self, count: int) -> float:
        async def run(queries: Any) -> float:
            begin = time.perf_counter()
            for _ in range(count):
                await queries.enqueue("noop", None)
            return time.perf_counter() - begin

        return float(asyncio.run(self._with_queries(run)))

    def enqueue_batch(self, count: int) -> float:
        names, payloads, priorities = ["noop"] * _db.BATCH, [None] * _db.BATCH, [0] * _db.BATCH

        async def run(queries: Any) -> float:
            begin = time.perf_counter()
            for _ in range(count // _db.BATCH):
                await queries.enqueue(names, payloads, priorities)
            return time.perf_counter() - begin

        return float(asyncio.run(self._with_queries(run)))

    def drain(self, count: int, workers: int) -> float:
        from pgqueuer import QueueManager
        from pgqueuer.types import QueueExecutionMode

        async def run(queries: Any) -> float:
            manager = QueueManager(queries)

            async def noop(job: object) -> None:
                return None

            manager.entrypoint("noop")(noop)

            begin = time.perf_counter()
            await manager.run(mode=QueueExecutionMode.drain, batch_size=workers)
            return time.perf_counter() - begin

        return float(asyncio.run(self._with_queries(run)))


# The comparison.


def _queues(engine: str, pg_url: str) -> list[Callable[[], Queue]]:
    if engine == "sqlite":
        return [
            lambda: Jobtable("sqlite", pg_url),
            lambda: Huey(store_result=False),
            lambda: Huey(store_result=True),
        ]
    return [
        lambda: Jobtable("postgres", pg_url),
        lambda: Procrastinate(pg_url),
        lambda: PgQueuer(pg_url, "asyncpg"),
        lambda: PgQueuer(pg_url, "psycopg"),
    ]


def _round(queue: Queue, jobs: int, figures: dict[str, Figure]) -> None:
    def add(key: str, seconds: float | None) -> None:
        if seconds is not None:
            figures.setdefault(key, Figure([], "jobs/s")).values.append(jobs / seconds)

    one = queue.enqueue_one(jobs)
    add("enqueue.1", one)
    drained = queue.drain(jobs, 1)
    add("drain.1", drained)
    add("e2e.1", one + drained)
    queue.clear()
    for workers in WORKERS[1:]:
        batch = queue.enqueue_batch(jobs)
        if workers == WORKERS[1]:
            add("enqueue.100", batch)
        add(f"drain.{workers}", queue.drain(jobs, workers))
        queue.clear()
    for threads in CONCURRENT_THREADS:
        add(f"threads.{threads}", queue.enqueue_threads(jobs, threads))
        queue.clear()


ROWS = [
    ("enqueue.1", "enqueue, 1 job a call"),
    ("enqueue.100", "enqueue, 100 jobs a call"),
    ("drain.1", "drain, 1 worker"),
    ("drain.4", "drain, 4 workers"),
    ("drain.16", "drain, 16 workers"),
    ("e2e.1", "end to end, 1 worker (enqueue 1 a call, then drain)"),
    *((f"threads.{n}", f"enqueue, 1 job a call, {n} threads at once") for n in CONCURRENT_THREADS),
]


def compare(engine: str, pg_url: str, jobs: int, rounds: int) -> tuple[Table, Table | None]:
    """Runs every queue of engine rounds times, each once a round.

    Returns the table, and on SQLite the table of issue 18's target against huey.
    """
    makers = _queues(engine, pg_url)
    queues: list[Queue] = []
    notes: list[str] = []
    try:
        for make in makers:
            try:
                queues.append(make())
            except ModuleNotFoundError as err:
                if err.name is None or err.name.split(".")[0] not in PEER_PACKAGES:
                    raise
                notes.append(
                    f"left out: {err} (install the bench extra: pip install -e '.[bench]')"
                )
        figures: dict[str, dict[str, Figure]] = {q.label: {} for q in queues}
        for number in range(rounds):
            for queue in queues:
                log(f"peers, {engine}, round {number + 1} of {rounds}: {queue.label}, {jobs} jobs")
                try:
                    _round(queue, jobs, figures[queue.label])
                except Exception as err:  # one peer failing must not lose the others
                    notes.append(f"{queue.label}, round {number + 1}: {type(err).__name__}: {err}")
                    log(notes[-1])
                    with contextlib.suppress(Exception):
                        queue.clear()
        for queue in queues:
            if isinstance(queue, Huey):
                notes.append(
                    f"huey's connection runs with PRAGMA synchronous = {queue.synchronous()}"
                )
    finally:
        for queue in queues:
            with contextlib.suppress(Exception):
                queue.close()
    peers = [q.label for q in queues if q.label != "jobtable"]
    ours = figures.get("jobtable", {})
    name = "SQLite" if engine == "sqlite" else "PostgreSQL"
    header = ["workload", "jobtable", *peers, *(f"jobtable / {p}" for p in peers)]
    table = Table(
        f"{name}: jobtable and its peers, {jobs} no-op jobs, median of {rounds} round(s)", header
    )
    for key, label in ROWS:
        mine = ours.get(key)
        theirs = [figures[p].get(key) for p in peers]
        if mine is None and all(t is None for t in theirs):
            continue
        table.add(
            label,
            cell(mine),
            *(cell(t) for t in theirs),
            *(_times(mine, t) for t in theirs),
        )
    table.notes += list(dict.fromkeys(notes))
    return table, _huey_targets(figures) if engine == "sqlite" else None


def _huey_targets(figures: dict[str, dict[str, Figure]]) -> Table | None:
    """Issue 18's target against huey: concurrent enqueuers at least 3x huey with the same threads.

    Measured against the faster of huey's two forms in this run, so "yes"
    holds against both.
    """
    hueys = [label for label in figures if label.startswith("huey")]
    ours = figures.get("jobtable", {})
    if not hueys or not ours:
        return None
    table = Table(
        "SQLite: concurrent enqueuers against huey with the same threads (issue 18)",
        ["target", "jobtable", "faster huey", "ratio", "met?"],
    )
    for threads in CONCURRENT_THREADS:
        key = f"threads.{threads}"
        mine = ours.get(key)
        theirs = [f for f in (figures[h].get(key) for h in hueys) if f is not None and f.values]
        best = max(theirs, key=lambda f: f.median, default=None)
        value = (
            None if mine is None or best is None or not mine.values else mine.median / best.median
        )
        table.add(
            f"enqueue from {threads} threads, >= 3x huey",
            cell(mine),
            cell(best),
            "-" if value is None else f"{value:.2f}x",
            "not measured" if value is None else ("yes" if value >= 3.0 else "no"),
        )
    return table


def _times(ours: Figure | None, theirs: Figure | None) -> str:
    if ours is None or theirs is None or not ours.values or not theirs.values:
        return "-"
    return f"{ours.median / theirs.median:.2f}x"


def main(
    engines: list[str], pg_url: str, *, quick: bool, rounds: int | None, markdown: bool
) -> str:
    """The peers comparison of engines, rendered; logs progress to stderr."""
    out = []
    shown = [*versions(), ("SQLite", sqlite3.sqlite_version)]
    out.append(Table("Peer versions", ["", ""], [[k, v] for k, v in shown]).render(markdown))
    for engine in engines:
        jobs = 500 if quick else (3000 if engine == "sqlite" else 2000)
        try:
            table, targets = compare(engine, pg_url, jobs, rounds or (1 if quick else 3))
            out.append(table.render(markdown))
            if targets is not None:
                out.append(targets.render(markdown))
        except Exception as err:
            if engine != "postgres":
                raise
            out.append(f"PostgreSQL peers skipped: {_db.redacted(pg_url)}: {err}\n")
    return "\n".join(out)
