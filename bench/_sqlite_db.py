"""One fresh SQLite file for the benchmark: its setup, and the raw loops of the store's SQL.

The raw loops run the generated Querier's SQLite statements
(``jobtable.db.sqlite.jobs``) on a connection of the benchmark's own, in WAL
mode with synchronous=FULL as the durable store runs.
"""

import datetime
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import jobtable
from bench._db import (
    BATCH,
    FILL_RUNNER,
    KIND,
    PAYLOAD,
    RESULT,
    RUNNER,
    WAITING,
    WAITING_KIND,
    Database,
    new_id,
    utc_text,
)
from jobtable.db.sqlite import jobs as sqlite_sql


def create_params() -> tuple[Any, ...]:
    """CreateJob's parameters for a ready job of the default queue."""
    now = utc_text()
    # No partition key, sequence, tags or meta.
    return (
        new_id(),
        KIND,
        "default",
        0,
        PAYLOAD,
        1,
        None,
        now,
        now,
        None,
        None,
        None,
        0,
        "[]",
        None,
    )


def claim_params(max_jobs: int) -> tuple[Any, ...]:
    """ClaimNextJob's parameters."""
    return (RUNNER, utc_text(), "default", max_jobs)


class SQLiteDatabase(Database):
    """A SQLite file with jobtable's schema, its store, and a raw connection of the benchmark's."""

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
            execute(sqlite_sql.CLAIM_NEXT_JOB, claim_params(1)).fetchall() for _ in range(batch)
        ]
        for rows in claimed:
            for row in rows:
                execute(sqlite_sql.SUCCEED_JOB, (RESULT, utc_text(), None, row[1], row[4]))
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
                execute(insert, create_params())
                job_id, attempt = execute(claim, claim_params(1)).fetchall()[0][1:5:3]
                execute(succeed, (RESULT, utc_text(), None, job_id, attempt))
        elif mode == "life":
            for _ in range(count):
                execute("BEGIN IMMEDIATE")
                execute(insert, create_params())
                job_id, attempt = execute(claim, claim_params(1)).fetchall()[0][1:5:3]
                execute(succeed, (RESULT, utc_text(), None, job_id, attempt))
                execute("COMMIT")
        else:
            for done in range(0, count, BATCH):
                size = min(BATCH, count - done)
                execute("BEGIN IMMEDIATE")
                for _ in range(size):
                    execute(insert, create_params())
                claimed = execute(claim, claim_params(size)).fetchall()
                for row in claimed:
                    execute(succeed, (RESULT, utc_text(), None, row[1], row[4]))
                execute("COMMIT")
        return time.perf_counter() - start

    def _inserts(self, count: int, batch: int) -> None:
        execute = self._conn.execute
        for done in range(0, count, batch):
            size = min(batch, count - done)
            if batch > 1:
                execute("BEGIN IMMEDIATE")
            for _ in range(size):
                execute(sqlite_sql.CREATE_JOB, create_params())
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
                execute(succeed, (RESULT, utc_text(), None, row[1], row[4]))
            running = execute(claim, claim_params(size)).fetchall()
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
                execute(claim, claim_params(1)).fetchall()[0]
            if batch > 1:
                execute("COMMIT")
        return time.perf_counter() - start

    def raw_start_latency(self, count: int) -> list[float]:
        execute = self._conn.execute
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            execute(sqlite_sql.CREATE_JOB, create_params())
            execute(sqlite_sql.CLAIM_NEXT_JOB, claim_params(1)).fetchall()[0]
            samples.append(time.perf_counter() - start)
        return samples
