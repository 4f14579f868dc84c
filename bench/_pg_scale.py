"""Where worker processes stop scaling on PostgreSQL: ``python -m bench._pg_scale [PROCS...]``.

For each count of worker processes (4 workers each; default 1 2 4 8) it
enqueues no-op jobs, untimed but measured, then drains them as the "worker
processes" section does, and prints per run: jobs/s; the CPU the
benchmark's server backends used (read from /proc, by the pids
pg_stat_activity shows for the run's application_name) and the worker
processes' own; the server's commits (``pg_stat_database.xact_commit``) and
WAL flushes (``pg_stat_wal.wal_sync``) a second, both counted over the whole
server; WAL bytes a job (``pg_current_wal_lsn()`` before and after, the
whole server's too: run it alone); and how the backends serving the run
spent their samples (``pg_stat_activity`` every 10 ms: idle, on CPU, or the
wait event). ``--jobs N`` sets the jobs of one process's run (more
processes drain N x procs / 2), ``--rounds R`` repeats the counts in turn.

``--explain`` instead prints what each statement of a job's life writes to
the WAL and how long the server takes for it (``EXPLAIN (ANALYZE, WAL)``,
each in a transaction rolled back, on a table of ``--jobs`` queued jobs):
the insert of 1 and of 100 jobs, and the claim-and-finish cycle of 1, 4 and
16 jobs.
"""

import argparse
import collections
import os
import statistics
import threading
import time
from typing import Any

import psycopg

from bench import _databases, _db
from bench._jobs import make_runner
from bench._plan import PAYLOADS
from bench._postgres_db import PostgresDatabase, create_params, finish_and_claim_params
from bench._processes import spawn_workers, wait_pending
from jobtable.db.postgres import jobs as pg_sql

APP = "jobtable_scale"
"""The application_name of the worker processes' connections: how the sampler finds them."""

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """The CPU seconds (user + system) process pid has used, or 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


class Sampler(threading.Thread):
    """Samples the run's backends every 10 ms until stopped: their states and their CPU."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self._conn = psycopg.connect(url, autocommit=True)
        self.states: collections.Counter[str] = collections.Counter()
        self.cpu: dict[int, float] = {}
        self._done = threading.Event()

    def run(self) -> None:
        query = (
            "SELECT pid, state, wait_event_type, wait_event FROM pg_stat_activity"
            " WHERE application_name = %s"
        )
        while not self._done.wait(0.01):
            for pid, state, kind, event in self._conn.execute(query, (APP,)).fetchall():
                if state == "active":
                    state = "CPU" if kind is None else f"{kind}:{event}"
                self.states[state] += 1
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu_of(pid))

    def stop(self) -> float:
        """Stops sampling; returns the CPU seconds the backends sampled had used."""
        self._done.set()
        self.join()
        for pid in self.cpu:
            self.cpu[pid] = max(self.cpu[pid], cpu_of(pid))
        self._conn.close()
        return sum(self.cpu.values())


def counters(conn: psycopg.Connection[Any]) -> tuple[int, int, int]:
    """The server's WAL position (bytes), commits in database test so far, WAL flushes so far."""
    row = conn.execute(
        "SELECT pg_current_wal_lsn() - '0/0', (SELECT xact_commit FROM pg_stat_database"
        " WHERE datname = current_database()), (SELECT wal_sync FROM pg_stat_wal)"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def run(db: PostgresDatabase, procs: int, count: int) -> dict[str, Any]:
    """Enqueues count jobs, then drains them with procs worker processes; the figures."""
    conn = psycopg.connect(db.target, autocommit=True)
    kinds = make_runner(db.store, workers=1, name="bench-enqueuer")
    wal0, _, _ = counters(conn)
    for _ in range(count // _db.BATCH):
        kinds.noop.enqueue_many(PAYLOADS)
    wal1, commits1, syncs1 = counters(conn)
    target = f"{db.target}&application_name={APP}"
    children = list(spawn_workers(db, procs, target=target))
    try:
        for child in children:
            child.expect("ready")
        sampler = Sampler(db.target)
        sampler.start()
        begin = time.perf_counter()
        for child in children:
            child.send("go")
        for child in children:
            child.expect("started")
        # A worker answers cpu lines once started: its start-up is left out.
        cpu0 = 0.0
        for child in children:
            child.send("cpu")
            cpu0 += float(child.expect(""))
        wait_pending(db, 0.002)
        elapsed = time.perf_counter() - begin
        cpu1 = 0.0
        for child in children:
            child.send("cpu")
            cpu1 += float(child.expect(""))
        server = sampler.stop()
        wal2, commits2, syncs2 = counters(conn)
    finally:
        for child in children:
            child.finish()
    conn.close()
    db.reset()
    samples = sum(sampler.states.values()) or 1
    return {
        "procs": procs,
        "jobs/s": count / elapsed,
        "server CPU (cores)": server / elapsed,
        "workers' CPU (cores)": (cpu1 - cpu0) / elapsed,
        "server CPU µs/job": server / count * 1e6,
        "commits/s": (commits2 - commits1) / elapsed,
        "WAL flushes/s": (syncs2 - syncs1) / elapsed,
        "WAL bytes/job, enqueue": (wal1 - wal0) / count,
        "WAL bytes/job, claim + finish": (wal2 - wal1) / count,
        "states": {k: round(v / samples, 3) for k, v in sampler.states.most_common(8)},
    }


def _explained(conn: psycopg.Connection[Any], query: str, params: Any) -> dict[str, float]:
    """EXPLAIN (ANALYZE, WAL) of query in a transaction rolled back: its WAL and server times."""
    with conn.transaction(force_rollback=True):
        cur = conn.execute(f"EXPLAIN (ANALYZE, WAL, FORMAT JSON) {query}", params)
        row = cur.fetchone()
    assert row is not None
    [plan] = row[0]
    top = plan["Plan"]
    return {
        "WAL records": top.get("WAL Records", 0),
        "WAL bytes": top.get("WAL Bytes", 0),
        "full pages": top.get("WAL FPI", 0),
        "planning ms": plan["Planning Time"],
        "execution ms": plan["Execution Time"],
    }


def explain(db: PostgresDatabase, jobs: int, repeat: int = 5) -> None:
    """Prints each statement's WAL and server time, the median of repeat runs."""
    conn = psycopg.connect(db.target, autocommit=True)
    try:
        db.raw_insert(jobs, 1000)
        many = {"jobs": psycopg.types.json.Jsonb([_insert_row() for _ in range(100)])}
        cases: list[tuple[str, str, Any]] = [
            ("insert 1 job (CreateJob)", pg_sql.CREATE_JOB, create_params()),
            ("insert 100 jobs (CreateJobs), per job", pg_sql.CREATE_JOBS, many),
        ]
        for size in (1, 4, 16):
            claimed = conn.execute(
                pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params([], size)
            ).fetchall()
            label = f"finish {size} + claim {size} (FinishAndClaimJobs), per job"
            cases.append((label, pg_sql.FINISH_AND_CLAIM_JOBS, (claimed, size)))
        for label, query, params in cases:
            runs = []
            for _ in range(repeat):
                if isinstance(params, tuple):  # the cycle: fresh timestamps each run
                    params = finish_and_claim_params(*params)
                runs.append(_explained(conn, query, params))
            per = 100 if "100" in label else int(label.split()[1]) if "finish" in label else 1
            figures = {k: statistics.median(r[k] for r in runs) / per for k in runs[0]}
            print(label + ": " + ", ".join(f"{k} {v:,.2f}" for k, v in figures.items()))
    finally:
        conn.close()
        db.reset()


def _insert_row() -> dict[str, Any]:
    """One job of CreateJobs's JSON array, as CreateJob's parameters make it."""
    row = create_params()
    for key in ("run_at", "now"):
        row[key] = row[key].isoformat()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("procs", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--jobs", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    db = _databases.create("postgres")
    assert isinstance(db, PostgresDatabase)
    try:
        if args.explain:
            explain(db, args.jobs)
            return
        for _ in range(args.rounds):
            for procs in args.procs:
                count = max(args.jobs, args.jobs * procs // 2 // _db.BATCH * _db.BATCH)
                figures = run(db, procs, count)
                print(
                    ", ".join(
                        f"{k} {v:,.1f}" if isinstance(v, float) else f"{k} {v}"
                        for k, v in figures.items()
                    ),
                    flush=True,
                )
    finally:
        db.close()


if __name__ == "__main__":
    main()
