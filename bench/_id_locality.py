"""What job ids' order costs SQLite's writes: ``python -m bench._id_locality [--rows N]``.

Every job row has an entry in the unique index on its id. Ids of 128
random bits put each new job's entry, and each pruned job's, on a page of
that index of its own, so a commit of many enqueues, and a prune of many
old jobs, writes about a page a job. Ids that begin with their creation
time put the jobs enqueued together, and the jobs pruned together, on the
same few pages. For each kind of id this fills a new file (the schema as it
is, ``synchronous=NORMAL``, no automatic checkpoint) with --rows finished
jobs enqueued at 800 a second, then measures, in interleaved rounds, the
WAL frames and milliseconds of one commit of 100 enqueues and of one prune
write of 200 jobs (the runner's batch), each after a checkpoint. Medians.
"""

import argparse
import binascii
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import jobtable
from bench._db import PG_URL
from bench._postgres_db import PostgresDatabase
from bench._stats import Table
from jobtable._values import id_at
from jobtable.db.postgres import jobs as postgres_sql
from jobtable.db.sqlite import jobs as sqlite_sql

FRAME = 4096 + 24
"""Bytes of one WAL frame: a page and its header."""
START_MS = 1_765_000_000_000
"""The first job's enqueue time, in milliseconds since the epoch."""
STEP_MS = 1.25
"""Milliseconds between two jobs: 800 jobs a second."""

_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def random_id(ms: int) -> str:
    """128 random bits, as 22 URL-safe characters: the ids jobtable made before."""
    return binascii.b2a_base64(os.urandom(16), newline=False).translate(_URL_SAFE)[:22].decode()


def timed_id(ms: int) -> str:
    """An id as jobtable makes it now, made at ms: the time first, then 80 random bits."""
    return id_at(ms)


IDS: dict[str, Callable[[int], str]] = {"random": random_id, "time first": timed_id}


def _stamp(ms: float) -> str:
    seconds, rest = divmod(int(ms * 1000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest:06d}Z"


class Subject:
    """A database of finished jobs whose ids come from make_id, and what a write adds to its log."""

    unit = ""

    def __init__(self, make_id: Callable[[int], str]) -> None:
        self.make_id = make_id
        self.next = 0
        self.pruned = 0

    def rows(self, count: int, status: str) -> list[tuple[str, str, str, str, str]]:
        """count new jobs' ids, status and times, 1.25 ms apart."""
        rows = []
        for _ in range(count):
            ms = START_MS + self.next * STEP_MS
            stamp = _stamp(ms)
            rows.append((self.make_id(int(ms)), status, stamp, stamp, stamp))
            self.next += 1
        return rows

    def insert(self, count: int, status: str) -> None:
        """Commits count new jobs of status."""
        raise NotImplementedError

    def delete(self, before: str) -> None:
        """Commits the prune of the 200 oldest jobs finished before before."""
        raise NotImplementedError

    def logged(self, write: Callable[[], None]) -> tuple[float, float]:
        """What write adds to the log (in unit) after a checkpoint, and its ms."""
        raise NotImplementedError

    def close(self) -> None:
        """Lets go of the database."""
        raise NotImplementedError

    def enqueue(self) -> tuple[float, float]:
        """Log and ms of one commit of 100 new jobs."""
        return self.logged(lambda: self.insert(100, "queued"))

    def prune(self) -> tuple[float, float]:
        """Log and ms of one prune write of the 200 oldest finished jobs."""
        self.pruned += 200
        before = _stamp(START_MS + self.pruned * STEP_MS)
        return self.logged(lambda: self.delete(before))


INSERT = (
    "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at)"
    " VALUES ({0}, 'noop', {0}, '{{}}', {0}, {0}, {0})"
)


class SQLiteSubject(Subject):
    """A new file (``synchronous=NORMAL``, no automatic checkpoint); the log is WAL frames."""

    unit = "WAL frames"

    def __init__(self, folder: Path, make_id: Callable[[int], str], rows: int) -> None:
        super().__init__(make_id)
        self.path = folder / f"{make_id.__name__}.db"
        jobtable.Store.open(self.path).close()
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        for pragma in ("synchronous = NORMAL", "wal_autocheckpoint = 0"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.insert(rows, "succeeded")

    def insert(self, count: int, status: str) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(INSERT.format("?"), self.rows(count, status))
        self.conn.execute("COMMIT")

    def delete(self, before: str) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(sqlite_sql.DELETE_FINISHED_JOBS, (before, 200))
        self.conn.execute("COMMIT")

    def logged(self, write: Callable[[], None]) -> tuple[float, float]:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        begin = time.perf_counter()
        write()
        elapsed = time.perf_counter() - begin
        return os.path.getsize(f"{self.path}-wal") / FRAME, elapsed * 1000

    def close(self) -> None:
        self.conn.close()


class PostgresSubject(Subject):
    """A new schema on the server; the log is WAL KiB, right after a CHECKPOINT (full pages)."""

    unit = "WAL KiB"

    def __init__(self, make_id: Callable[[int], str], rows: int) -> None:
        super().__init__(make_id)
        self.db = PostgresDatabase.create(PG_URL)
        self.conn = self.db._connect()
        for done in range(0, rows, 10_000):
            self.insert(min(10_000, rows - done), "succeeded")
        self.conn.execute("VACUUM ANALYZE jobs")

    def insert(self, count: int, status: str) -> None:
        with self.conn.transaction(), self.conn.cursor() as cursor:
            cursor.executemany(INSERT.format("%s"), self.rows(count, status))

    def delete(self, before: str) -> None:
        self.conn.execute(postgres_sql.DELETE_FINISHED_JOBS, {"before": before, "max_jobs": 200})

    def logged(self, write: Callable[[], None]) -> tuple[float, float]:
        self.conn.execute("CHECKPOINT")
        lsn = "SELECT pg_current_wal_insert_lsn()"
        first = self.conn.execute(lsn).fetchone()[0]
        begin = time.perf_counter()
        write()
        elapsed = time.perf_counter() - begin
        last = self.conn.execute(lsn).fetchone()[0]
        size = self.conn.execute("SELECT pg_wal_lsn_diff(%s, %s)", (last, first)).fetchone()[0]
        return float(size) / 1024, elapsed * 1000

    def close(self) -> None:
        self.conn.close()
        self.db.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._id_locality")
    parser.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        subjects: dict[str, Subject] = {
            name: SQLiteSubject(Path(folder), make, args.rows)
            if args.engine == "sqlite"
            else PostgresSubject(make, args.rows)
            for name, make in IDS.items()
        }
        try:
            for _ in range(args.rounds):
                for name, subject in subjects.items():
                    found.setdefault((name, "enqueue"), []).append(subject.enqueue())
                    found.setdefault((name, "prune"), []).append(subject.prune())
        finally:
            for subject in subjects.values():
                subject.close()
    title = f"{args.engine}, {args.rows:,} finished jobs; medians of {args.rounds} rounds"
    unit = next(iter(subjects.values())).unit
    table = Table(title, ["ids", "write", unit, "ms"])
    for (name, write), samples in found.items():
        frames = statistics.median(s[0] for s in samples)
        ms = statistics.median(s[1] for s in samples)
        label = "a commit of 100 enqueues" if write == "enqueue" else "a prune write of 200 jobs"
        table.add(name, label, f"{frames:,.0f}", f"{ms:.2f}")
    print(table.render(markdown=True))


if __name__ == "__main__":
    main()
