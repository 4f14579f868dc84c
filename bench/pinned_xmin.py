"""PostgreSQL's claim while a long transaction holds the xmin back, against without.

A throwaway cluster of its own (as ``bench.restart`` makes one: the
benchmark holds back the vacuum horizon of a whole database for minutes,
which no shared server should suffer), one schema, and a steady churn
through the runner's own statement: a backlog of BACKLOG ready jobs, into
which each cycle enqueues CYCLE jobs and claims as many, CLAIM at a time,
each claim storing the outcomes of the jobs the one before it took
(FinishAndClaimJobs, one statement, as the runner sends it). Three phases:
clean; pinned (a REPEATABLE READ transaction that read the jobs table stays
open); after (it ended, autovacuum free to run). Every WINDOW seconds it
prints the claims' rate and latency, and the jobs table's size with its
indexes; at the end of the pinned phase, and of the run, what VACUUM finds:
the dead rows it removed and those it had to keep.

    .venv/bin/python -m bench.pinned_xmin                  # 60 s clean, 180 s pinned, 120 s after
    .venv/bin/python -m bench.pinned_xmin --clean 30 --pinned 60 --after 60
"""

import argparse
import re
import statistics
import time
from typing import Any

from bench._postgres_db import PostgresDatabase, finish_and_claim_params
from bench._stats import Table
from bench.restart import cluster
from jobtable.db.postgres import jobs as pg_sql

BACKLOG = 1000
"""Ready jobs kept in the queue throughout."""
CYCLE = 100
"""Jobs each cycle enqueues, then claims and finishes."""
CLAIM = 10
"""Jobs a claim takes."""
WINDOW = 10.0
"""Seconds each printed row covers."""

_VACUUMED = re.compile(
    r'vacuuming "[^"]*\.jobs".*'
    r"tuples: (\d+) removed, \d+ remain, (\d+) are dead but not yet removable",
    re.DOTALL,
)


def _cycle(db: PostgresDatabase, latencies: list[float]) -> int:
    """Enqueues CYCLE jobs and claims as many, CLAIM at a time; returns the jobs finished."""
    db._inserts(CYCLE, CYCLE)
    execute = db._conn.execute
    running: list[Any] = []
    claimed = 0
    while claimed < CYCLE:
        begin = time.perf_counter()
        rows = execute(
            pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params(running, CLAIM)
        ).fetchall()
        latencies.append(time.perf_counter() - begin)
        running = [row for row in rows if not row[0]]
        claimed += len(running)
    execute(pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params(running, 0)).fetchall()
    return claimed


def _size_mb(db: PostgresDatabase) -> float:
    row = db._conn.execute("SELECT pg_total_relation_size('jobs')").fetchone()
    return float(row[0]) / 1e6


def _vacuum(db: PostgresDatabase) -> tuple[int, int]:
    """VACUUMs the jobs table; returns the dead rows it removed and those it kept."""
    found: list[tuple[int, int]] = []

    def notice(diag: Any) -> None:
        match = _VACUUMED.search(diag.message_primary or "")
        if match:
            found.append((int(match[1]), int(match[2])))

    conn = db._connect()
    try:
        conn.add_notice_handler(notice)
        conn.execute("VACUUM (VERBOSE) jobs")
    finally:
        conn.close()
    return found[0] if found else (-1, -1)


def _phase(db: PostgresDatabase, name: str, seconds: float, table: Table) -> list[float]:
    """Churns for seconds, a row of table per WINDOW; returns each window's median claim (ms)."""
    medians = []
    end = time.monotonic() + seconds
    offset = 0.0
    while time.monotonic() < end:
        latencies: list[float] = []
        jobs = 0
        start = time.monotonic()
        while time.monotonic() - start < WINDOW:
            jobs += _cycle(db, latencies)
        took = time.monotonic() - start
        ms = sorted(x * 1000 for x in latencies)
        p50, p99 = statistics.median(ms), ms[int(len(ms) * 0.99)]
        medians.append(p50)
        table.add(
            f"{name} {offset:.0f}-{offset + took:.0f} s",
            f"{jobs / took:,.0f}",
            f"{p50:.2f}",
            f"{p99:.2f}",
            f"{_size_mb(db):.1f}",
        )
        print(table.rows[-1], flush=True)
        offset += took
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pinned_xmin")
    parser.add_argument("--clean", type=float, default=60.0, help="seconds before the pin")
    parser.add_argument("--pinned", type=float, default=180.0, help="seconds the xmin is held")
    parser.add_argument("--after", type=float, default=120.0, help="seconds after it ends")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    table = Table(
        f"Claims under a pinned xmin ({BACKLOG:,} ready jobs, {CYCLE} enqueued and claimed "
        f"a cycle, {CLAIM} a claim with the outcomes before it)",
        ["window", "jobs/s", "claim p50 ms", "claim p99 ms", "jobs table MB"],
    )
    with cluster() as (url, _):
        db = PostgresDatabase.create(url)
        try:
            db._inserts(BACKLOG, 100)
            clean = _phase(db, "clean", args.clean, table)
            pin = db._connect()
            pin.autocommit = False
            pin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            pin.execute("SELECT count(*) FROM jobs").fetchone()
            pinned = _phase(db, "pinned", args.pinned, table)
            removed, kept = _vacuum(db)
            table.notes.append(
                f"VACUUM at the end of the pin: {removed:,} dead rows removed, "
                f"{kept:,} kept (dead, but the pinned snapshot may see them)"
            )
            pin.rollback()
            pin.close()
            after = _phase(db, "after", args.after, table)
            removed, kept = _vacuum(db)
            table.notes.append(f"VACUUM at the end: {removed:,} dead rows removed, {kept:,} kept")
        finally:
            db.close()
    base = statistics.median(clean)
    table.notes.append(
        f"claim p50 at the end of the pin / clean: {pinned[-1] / base:.1f}x; "
        f"over the whole pin: {statistics.median(pinned) / base:.1f}x; "
        f"last window after / clean: {after[-1] / base:.1f}x"
    )
    print(table.render(args.markdown))


if __name__ == "__main__":
    main()
