"""A long steady run: does jobtable hold its rate, latency and sizes for many minutes?

    .venv/bin/python -m bench.soak --minutes 30 --engine postgres
    .venv/bin/python -m bench.soak --minutes 5 --engine sqlite --retention 60
    .venv/bin/python -m bench.soak --minutes 30 --engine postgres --cluster   # as root

Worker processes (``bench._soak_child``, ``--processes`` of them with
``--workers`` each) run no-op jobs that this process enqueues at a steady
``--rate`` per second (by default 70% of the drain rate it measures first,
of ``--drain-jobs`` jobs enqueued as fast as it can while the workers run
them), while ``--readers`` threads read job
listings back to back, as dashboards do. Finished jobs are pruned as the
runner prunes them: after its default retention (7 days, so not within the
run: the run says so) or after ``--retention`` seconds.

Every minute it prints a Markdown table row: jobs enqueued and finished per
second, enqueue-to-start p50 and p99, the backlog, and the storage figures of
``bench._soak_probe`` (PostgreSQL: table, heap and index sizes, live and dead
tuples, autovacuum runs, the minute's HOT share of updates; SQLite: file
size, page and freelist counts, the largest and the last -wal size and how
often the WAL restarted). At the end it prints the goal checks of
``bench._soak_report``. ``--cluster`` runs PostgreSQL on a throwaway cluster
with the server's default settings (autovacuum on), as ``bench.restart``
does; by default it uses ``--pg-url``.
"""

import argparse
import contextlib
import datetime
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import jobtable
from bench import _databases, _db
from bench._jobs import Ping
from bench._processes import Child
from bench._soak_probe import (
    PostgresProbe,
    ShmReader,
    SQLiteProbe,
    open_probe,
    wal_bytes,
    wal_resets,
)
from bench._soak_report import Minute, goal_checks, header, row

DEFAULT_RETENTION = datetime.timedelta(days=7)
"""The runner's default retention (``jobtable.Runner``'s retention argument)."""


def _say(text: str) -> None:
    print(text, flush=True)


async def _never(ctx: jobtable.JobContext[None], payload: Ping) -> None:
    raise AssertionError("the soak's enqueuer runs no job")


class Enqueuer:
    """Enqueues soak jobs at rate per second in a thread of its own, in batches every tick."""

    TICK = 0.02

    def __init__(self, store: jobtable.Store, rate: float) -> None:
        runner = jobtable.Runner(store, workers=1, name="soak-enqueuer")
        self._kind = runner.register("soak", _never)
        self.rate = rate
        self.sent = 0
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-enqueuer", daemon=True)

    def start(self) -> None:
        """Starts the thread."""
        self._thread.start()

    def _run(self) -> None:
        begin = time.perf_counter()
        while not self.stop.is_set():
            due = int(self.rate * (time.perf_counter() - begin)) - self.sent
            if due > 0:
                now = time.time()
                self._kind.enqueue_many([Ping(t=now) for _ in range(min(due, 1000))])
                self.sent += min(due, 1000)
            self.stop.wait(self.TICK)

    def join(self) -> None:
        """Stops the thread and waits for it."""
        self.stop.set()
        self._thread.join(timeout=60)


def _read_loop(store: jobtable.Store, stop: threading.Event, pause: float) -> None:
    while not stop.is_set():
        store.list_jobs(limit=20)
        if pause:
            stop.wait(pause)


@contextlib.contextmanager
def _children(db: _db.Database, args: argparse.Namespace) -> Iterator[list[Child]]:
    children = [
        Child(
            {
                "target": db.target,
                "name": f"soak-process-{i}",
                "workers": args.workers,
                "retention": args.retention,
            },
            module="bench._soak_child",
        )
        for i in range(args.processes)
    ]
    try:
        for child in children:
            child.expect("ready")
        yield children
    finally:
        for child in children:
            child.finish()


def _take(children: list[Child]) -> tuple[int, list[float]]:
    done, lat = 0, []
    for child in children:
        child.send("stats")
        out = json.loads(child.expect(""))
        done += out["done"]
        lat += out["lat"]
    return done, lat


def _drain_rate(db: _db.Database, children: list[Child], count: int) -> float:
    """Starts the children, and returns the jobs per second they ran of count enqueued at once.

    The jobs are enqueued in batches as fast as this thread can while the
    children run them, so the rate holds both sides of a job's life.
    """
    kind = jobtable.Runner(db.store, workers=1, name="soak-filler").register("soak", _never)
    for child in children:
        child.send("go")
    for child in children:
        child.expect("started")
    begin = time.perf_counter()
    for _ in range(count // _db.BATCH):
        kind.enqueue_many([Ping(t=time.time()) for _ in range(_db.BATCH)])
    while db.pending():
        time.sleep(0.01)
    rate = count / (time.perf_counter() - begin)
    _take(children)
    return rate


class Sampler:
    """Follows the -wal file every second within a minute: its largest size and its restarts."""

    def __init__(self, db: _db.Database) -> None:
        self._path = getattr(db, "path", None) if db.engine == "sqlite" else None
        self._seq = wal_resets(self._path) if self._path is not None else None
        self.shm = ShmReader(self._path) if self._path is not None else None
        self.largest = 0
        self.frames = 0
        self.restarts = 0

    def sample(self) -> None:
        """Reads the -wal file's size and header once."""
        if self._path is None:
            return
        self.largest = max(self.largest, wal_bytes(self._path))
        if self.shm is not None:
            self.frames = max(self.frames, self.shm.frames())
        seq = wal_resets(self._path)
        if seq is not None and self._seq is not None and seq > self._seq:
            self.restarts += seq - self._seq
        if seq is not None:
            self._seq = seq

    def reset(self) -> tuple[float, int, int]:
        """The largest size (MiB), most frames and restarts since the last reset; starts anew."""
        out = self.largest / (1024 * 1024), self.frames, self.restarts
        self.largest, self.frames, self.restarts = 0, 0, 0
        return out


def _minute(
    number: int,
    children: list[Child],
    probe: SQLiteProbe | PostgresProbe,
    enqueuer: Enqueuer,
    sampler: Sampler,
    previous: dict[str, Any],
) -> Minute:
    """Waits out one minute, sampling the WAL every second, and returns what it measured."""
    begin, sent = time.perf_counter(), enqueuer.sent
    while (left := 60 - (time.perf_counter() - begin)) > 0:
        sampler.sample()
        time.sleep(min(1.0, left))
    done, lat = _take(children)
    elapsed = time.perf_counter() - begin
    found = probe.probe()
    minute = Minute(number, (enqueuer.sent - sent) / elapsed, done / elapsed, lat, found)
    if "updates" in found and "updates" in previous:
        updates = found["updates"] - previous["updates"]
        minute.hot_pct = 100 * (found["hot"] - previous["hot"]) / updates if updates else None
    if isinstance(probe, SQLiteProbe):
        minute.wal_max_mib, minute.wal_frames, minute.wal_restarts = sampler.reset()
    return minute


def _describe(
    db: _db.Database, probe: SQLiteProbe | PostgresProbe, args: argparse.Namespace
) -> None:
    _say(f"engine: {db.engine} {db.version()}; {args.processes} processes x {args.workers} workers")
    if args.retention is None:
        _say(
            f"retention: the runner's default, {DEFAULT_RETENTION.days} days, longer than the run:"
            " nothing is pruned (pass --retention SECONDS to exercise pruning)"
        )
    else:
        _say(f"retention: {args.retention:g} s")
    if isinstance(probe, PostgresProbe):
        settings = probe.settings()
        _say("server: " + ", ".join(f"{k}={v}" for k, v in sorted(settings.items())))
        if settings.get("autovacuum") == "off":
            _say("autovacuum is off on this server: nothing reclaims dead tuples (see --cluster)")
        _say(f"jobs reloptions: {probe.probe()['reloptions']}")


def soak(db: _db.Database, args: argparse.Namespace, sampler: Sampler) -> list[Minute]:
    """Runs the soak on db as args say, printing each minute's row; returns the minutes."""
    probe = open_probe(db)
    stop = threading.Event()
    readers = [
        threading.Thread(target=_read_loop, args=(db.store, stop, args.reader_pause), daemon=True)
        for _ in range(args.readers)
    ]
    try:
        _describe(db, probe, args)
        with _children(db, args) as children:
            drained = _drain_rate(db, children, args.drain_jobs)
            rate = args.rate if args.rate is not None else 0.7 * drained
            _say(f"drain rate: {drained:.0f} jobs/s; enqueue rate: {rate:.0f} jobs/s")
            enqueuer = Enqueuer(db.store, rate)
            for thread in readers:
                thread.start()
            enqueuer.start()
            _say(header(db.engine))
            minutes: list[Minute] = []
            previous = probe.probe()
            try:
                for number in range(1, args.minutes + 1):
                    minutes.append(_minute(number, children, probe, enqueuer, sampler, previous))
                    previous = minutes[-1].probe
                    _say(row(db.engine, minutes[-1]))
            finally:
                enqueuer.join()
                stop.set()
        return minutes
    finally:
        stop.set()
        probe.close()


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--rate", type=float, help="jobs/s (default: 70%% of the drain rate)")
    parser.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--retention", type=float, help="seconds (default: the runner's)")
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--reader-pause", type=float, default=0.05, help="seconds")
    parser.add_argument("--drain-jobs", type=int, default=5000)
    parser.add_argument("--pg-url", default=_db.PG_URL)
    parser.add_argument("--cluster", action="store_true", help="a throwaway cluster (root)")
    parser.add_argument(
        "--table-options",
        help="PostgreSQL: storage parameters set on jobs first, e.g. fillfactor=70",
    )
    args = parser.parse_args(argv)
    if args.minutes < 1 or args.processes < 1 or args.workers < 1:
        parser.error("--minutes, --processes and --workers must be at least 1")
    if args.rate is not None and args.rate <= 0:
        parser.error(f"--rate must be positive, got {args.rate}")
    if args.retention is not None and args.retention < 0:
        parser.error(f"--retention must be 0 or more, got {args.retention}")
    return args


def _set_table_options(db: _db.Database, options: str) -> None:
    """ALTER TABLE jobs SET (options): the bench's own, to compare storage parameters."""
    import psycopg

    with psycopg.connect(db.target, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE jobs SET ({options})")


def _run(args: argparse.Namespace, url: str) -> None:
    db = _databases.create(args.engine, url)
    sampler = Sampler(db)
    try:
        if args.table_options and db.engine == "postgres":
            _set_table_options(db, args.table_options)
        minutes = soak(db, args, sampler)
    finally:
        db.close()
        # Only now: closing a descriptor of the -shm file drops this
        # process's SQLite locks on it (see ShmReader).
        if sampler.shm is not None:
            sampler.shm.close()
    _say("")
    for line in goal_checks(args.engine, minutes, args.retention):
        _say(f"- {line}")


def main(argv: list[str] | None = None) -> None:
    """Runs the soak as the command line says."""
    args = _arguments(argv)
    # A stop by SIGTERM runs the clean-up (children, the database, a cluster).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.engine == "postgres" and args.cluster:
        from bench.restart import cluster

        with cluster() as (url, _):
            _run(args, url)
    else:
        _run(args, args.pg_url)


if __name__ == "__main__":
    main(sys.argv[1:])
