"""PostgreSQL's claim while a long transaction holds the xmin back, against without, interleaved.

A throwaway cluster of its own (as ``bench.restart`` makes one: the
benchmark holds back the vacuum horizon of a database for minutes, which no
shared server should suffer) with two databases alike, each with jobtable's
schema and a steady churn through the runner's own statement: a backlog of
BACKLOG ready jobs, into which each cycle enqueues CYCLE jobs and claims as
many, CLAIM at a time, each claim storing the outcomes of the jobs the one
before it took (FinishAndClaimJobs, one statement, as the runner sends it).
In one of them a REPEATABLE READ transaction that read the jobs table stays
open for the pinned phase; PostgreSQL's horizon is per database, so the
other is the clean baseline. The two take turns cycle by cycle, so the
machine's load weighs on both alike. Every WINDOW seconds it prints, for
each, the claims' median and p99 latency and the jobs table's size with its
indexes; then the transaction ends and the after phase shows the pinned
database's claims coming back. At the end of each phase both databases are
vacuumed, and it says what VACUUM found in the pinned one: the dead rows it
removed and those it had to keep.

    .venv/bin/python -m bench.pinned_xmin                  # 180 s pinned, 120 s after
    .venv/bin/python -m bench.pinned_xmin --pinned 60 --after 60
    .venv/bin/python -m bench.pinned_xmin --from-head      # claims as before resume points

Each claim starts where the database's last claim stopped and from the
queue's head at least once a second, as a runner's claims do (ClaimCursors);
--from-head starts every claim at the head.
"""

import argparse
import re
import statistics
import time
from typing import Any

from bench._postgres_db import PostgresDatabase, finish_and_claim_params
from bench._stats import Table
from bench.restart import cluster
from jobtable._engines.postgres.claim_cursor import HEAD, ClaimCursors
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


def _cycle(db: PostgresDatabase, latencies: list[float], cursors: ClaimCursors | None) -> int:
    """Enqueues CYCLE jobs and claims as many, CLAIM at a time; returns the jobs finished.

    With cursors, each claim starts where the last one stopped, as a
    runner's do (the head at least once a second); without, at the head.
    """
    db._inserts(CYCLE, CYCLE)
    execute = db._conn.execute
    running: list[Any] = []
    claimed = 0
    while claimed < CYCLE:
        after = HEAD if cursors is None else cursors.start("default", None)
        begin = time.perf_counter()
        rows = execute(
            pg_sql.FINISH_AND_CLAIM_JOBS, finish_and_claim_params(running, CLAIM, after)
        ).fetchall()
        latencies.append(time.perf_counter() - begin)
        running = [row for row in rows if not row[0]]
        if cursors is not None:
            cursors.claimed("default", None, ((row[8], row[1]) for row in running))
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


def _window_cells(latencies: list[float]) -> tuple[float, str, str]:
    """The window's median claim (ms), and its median and p99 as text."""
    ms = sorted(x * 1000 for x in latencies)
    p50 = statistics.median(ms)
    return p50, f"{p50:.2f}", f"{ms[int(len(ms) * 0.99)]:.2f}"


def _phase(
    dbs: tuple[PostgresDatabase, PostgresDatabase],
    name: str,
    seconds: float,
    table: Table,
    resume: bool,
) -> list[float]:
    """Churns both databases in turn for seconds, a row of table per WINDOW.

    Returns each window's ratio of the pinned database's median claim to the clean one's.
    """
    ratios = []
    cursors = [ClaimCursors() if resume else None for _ in dbs]
    end = time.monotonic() + seconds
    offset = 0.0
    while time.monotonic() < end:
        latencies: tuple[list[float], list[float]] = ([], [])
        start = time.monotonic()
        while time.monotonic() - start < WINDOW:
            for db, into, places in zip(dbs, latencies, cursors, strict=True):
                _cycle(db, into, places)
        took = time.monotonic() - start
        clean, pinned = (_window_cells(x) for x in latencies)
        ratios.append(pinned[0] / clean[0])
        table.add(
            f"{name} {offset:.0f}-{offset + took:.0f} s",
            clean[1],
            pinned[1],
            f"{ratios[-1]:.1f}x",
            clean[2],
            pinned[2],
            f"{_size_mb(dbs[0]):.1f}",
            f"{_size_mb(dbs[1]):.1f}",
        )
        print(table.rows[-1], flush=True)
        offset += took
    return ratios


def _second_database(url: str) -> str:
    """Creates the database pinned on url's server; returns its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE pinned")
    return url.rsplit("/", 1)[0] + "/pinned"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pinned_xmin")
    parser.add_argument("--pinned", type=float, default=180.0, help="seconds the xmin is held")
    parser.add_argument("--after", type=float, default=120.0, help="seconds after it ends")
    parser.add_argument(
        "--from-head",
        action="store_true",
        help="every claim starts at the queue's head (no resume point, as before it)",
    )
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    table = Table(
        f"Claims under a pinned xmin, beside a database without ({BACKLOG:,} ready jobs, "
        f"{CYCLE} enqueued and claimed a cycle, {CLAIM} a claim with the outcomes before it)",
        ["window", "clean p50 ms", "pinned p50 ms", "pinned / clean", "clean p99 ms",
         "pinned p99 ms", "clean MB", "pinned MB"],
    )  # fmt: skip
    with cluster() as (url, _):
        clean = PostgresDatabase.create(url)
        pinned = PostgresDatabase.create(_second_database(url))
        dbs = (clean, pinned)
        try:
            for db in dbs:
                db._inserts(BACKLOG, 100)
            pin = pinned._connect()
            pin.autocommit = False
            pin.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            pin.execute("SELECT count(*) FROM jobs").fetchone()
            during = _phase(dbs, "pinned", args.pinned, table, not args.from_head)
            _vacuum(clean)  # both alike, so that the after phase compares them fairly
            removed, kept = _vacuum(pinned)
            table.notes.append(
                f"VACUUM of the pinned database at the end of the pin: {removed:,} dead rows "
                f"removed, {kept:,} kept (dead, but the open transaction may still see them)"
            )
            pin.rollback()
            pin.close()
            after = _phase(dbs, "after", args.after, table, not args.from_head)
            removed, kept = _vacuum(pinned)
            table.notes.append(
                f"VACUUM of the pinned database at the end: {removed:,} dead rows removed, "
                f"{kept:,} kept"
            )
        finally:
            for db in dbs:
                db.close()
    table.notes.append(
        f"pinned / clean median claim: {during[0]:.1f}x in the pin's first window, "
        f"{during[-1]:.1f}x in its last, {statistics.median(during):.1f}x over the pin; "
        f"{after[0]:.1f}x in the first window after it, {after[-1]:.1f}x in the last"
    )
    print(table.render(args.markdown))


if __name__ == "__main__":
    main()
