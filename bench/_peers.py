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

Each queue is a module of its own, behind the face ``bench._peer_queue``
gives them: ``bench._peer_jobtable``, ``bench._peer_huey``,
``bench._peer_procrastinate`` and ``bench._peer_pgqueuer`` (the last two on
``bench._peer_postgres``'s throwaway database). This module runs the rounds
and renders the tables.
"""

import contextlib
import importlib.metadata
import sqlite3
from collections.abc import Callable

from bench import _db
from bench._enqueue import CONCURRENT_THREADS
from bench._peer_huey import Huey
from bench._peer_jobtable import Jobtable
from bench._peer_pgqueuer import PgQueuer
from bench._peer_procrastinate import Procrastinate
from bench._peer_queue import Queue
from bench._plan import log
from bench._stats import Figure, Table, cell

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
