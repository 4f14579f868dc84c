"""One fresh PostgreSQL schema for the benchmark: its setup, and the raw loops of the store's SQL.

The raw loops run the generated Querier's PostgreSQL statements
(``jobtable.db.postgres.jobs``) on a connection of the benchmark's own, with
synchronous_commit=on as the store runs; the batched ones are pipelined.
"""

import contextlib
import datetime
import secrets
import time
import urllib.parse
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
    drop_anew,
    new_id,
    run_threads,
)
from jobtable._engines.postgres.claim_cursor import HEAD
from jobtable.db.postgres import jobs as pg_sql


def _now() -> datetime.datetime:
    """The time as PostgreSQL's parameters take it: an aware datetime in UTC."""
    return datetime.datetime.now(datetime.UTC)


# The runner claims and finishes with one query on PostgreSQL, FinishAndClaimJobs;
# the raw loops run it too, claiming with no outcomes and finishing with no claim.
# Its rows are (finished, seq, id, kind, payload, attempt, max_attempts, timeout, priority).


def finish_and_claim_params(
    rows: list[Any], max_jobs: int, after: tuple[int, int] = HEAD
) -> dict[str, Any]:
    """FinishAndClaimJobs's parameters: rows (claimed rows) succeed, then max_jobs are claimed.

    The claim picks jobs after the place after, (priority, seq): by default
    from the queue's head.
    """
    return {
        "ids": [row[2] for row in rows],
        "attempts": [row[5] for row in rows],
        "states": ["succeeded"] * len(rows),
        "results": [RESULT] * len(rows),
        "errors": [None] * len(rows),
        "run_ats": [None] * len(rows),
        "run_traces": None,
        "queue": "default",
        "runner": RUNNER,
        "now": _now(),
        "max_jobs": max_jobs,
        "after_priority": after[0],
        "after_seq": after[1],
    }


def create_params() -> dict[str, Any]:
    """CreateJob's parameters for a ready job of the default queue."""
    now = _now()
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
        "partition_key": None,
        "sequence_key": None,
        "sequence_blocks": False,
        "tags": "[]",
        "meta": None,
    }


class PostgresDatabase(Database):
    """A PostgreSQL schema with jobtable's, its store, and a raw connection of the benchmark's."""

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
            execute(pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params([], 1)).fetchone()
            for _ in range(batch)
        ]
        for row in claimed:
            if row is not None:
                execute(pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params([row], 0))
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
            execute(insert, create_params())
            row = execute(claim, finish_and_claim_params([], 1)).fetchone()
            execute(claim, finish_and_claim_params([row], 0))

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
                            create_params(),
                        )
                    cursor = execute(claim, finish_and_claim_params([], size))
                    pipeline.sync()
                    execute(claim, finish_and_claim_params(cursor.fetchall(), 0))
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
                    create_params(),
                )
                continue
            with conn.pipeline():
                execute("BEGIN")
                for _ in range(size):
                    execute(
                        pg_sql.CREATE_JOB,
                        create_params(),
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
            running = execute(
                pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params(running, size)
            ).fetchall()
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
                execute(claim, finish_and_claim_params([], 1)).fetchone()
                continue
            with conn.pipeline():
                execute("BEGIN")
                cursors = [execute(claim, finish_and_claim_params([], 1)) for _ in range(size)]
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
                create_params(),
            )
            execute(pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params([], 1)).fetchone()
            samples.append(time.perf_counter() - start)
        return samples
