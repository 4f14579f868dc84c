"""How long a page of ``list_jobs`` takes under every filter, at 1M finished rows, on each engine.

For each engine it makes a fresh database holding 1,200 old jobs of every
status (kinds ``report`` and ``ping``, queues ``mail`` and ``default``, all
tagged ``team:a``), then ``--rows`` newer succeeded jobs of another kind and
queue (1M by default, bulk-loaded; PostgreSQL is then VACUUM ANALYZEd, as
autovacuum would leave a table that size), and times
``Store.list_jobs(limit=50)`` under every combination of status, kind
``report``, queue ``mail`` and tag ``team:a``: what the CLI's ``jobtable
jobs`` and the dashboard's job list read. Then it adds ``--rows`` failed
jobs of kind ``report`` in queue ``mail``, newer than the rest, and times
every page again: the worst case of a listing that keeps one status from an
index holding every status (succeeded jobs of ``report`` then skip a
million failed ones).

Medians of --repeat pages, milliseconds, warm.

    .venv/bin/python -m bench.listing_1m                  # both engines, 1M rows
    .venv/bin/python -m bench.listing_1m --engine sqlite --rows 100000
"""

import argparse
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench import _databases, _db
from bench._stats import Table

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled", "pending")
OLD = 1_200
T = "2026-01-01T00:00:00.000000Z"
FILTERS = [
    {
        name: value
        for name, value in zip(("status", "kind", "queue", "tag"), values, strict=True)
        if value is not None
    }
    for values in itertools.product(
        (None, *STATUSES), (None, "report"), (None, "mail"), (None, "team:a")
    )
]

_SQLITE_FILL = (
    "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at, created_at,"
    " updated_at, tags)"
    " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)"
    " SELECT lower(hex(randomblob(16))), ?, ?, ?, CASE WHEN ? = 'failed' THEN 'x' END,"
    " '{}', ?, ?, ?, '[]' FROM n"
)
_PG_FILL = (
    "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at, created_at,"
    " updated_at, tags)"
    " SELECT md5(random()::text || g::text), %s, %s, %s,"
    " CASE WHEN %s = 'failed' THEN 'x' END, '{}', %s, %s, %s, '[]'"
    " FROM generate_series(1, %s) AS g"
)


def _old_jobs() -> list[tuple[str, str, str, str, str | None]]:
    """(id, kind, queue, status, error) of the old jobs, every value of each filter mixed."""
    return [
        (
            f"old-{n}",
            ("report", "ping")[n % 2],
            ("mail", "default")[n // 2 % 2],
            STATUSES[n // 4 % 6],
            "x" if STATUSES[n // 4 % 6] == "failed" else None,
        )
        for n in range(OLD)
    ]


def _load(db: _db.Database, fill: list[tuple[str, str, str, int]]) -> None:
    """Inserts the old jobs when the table is empty, then each (kind, queue, status, count)."""
    if db.engine == "sqlite":
        _load_sqlite(db.target, fill)
    else:
        _load_postgres(db.target, fill)


def _load_sqlite(target: str, fill: list[tuple[str, str, str, int]]) -> None:
    import sqlite3

    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        if not conn.execute("SELECT EXISTS (SELECT 1 FROM jobs)").fetchone()[0]:
            conn.executemany(
                "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at,"
                " created_at, updated_at, tags)"
                f" VALUES (?, ?, ?, ?, ?, '{{}}', '{T}', '{T}', '{T}', '[\"team:a\"]')",
                _old_jobs(),
            )
        for kind, queue, status, count in fill:
            conn.execute(_SQLITE_FILL, (count, kind, queue, status, status, T, T, T))
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()


def _load_postgres(target: str, fill: list[tuple[str, str, str, int]]) -> None:
    import psycopg

    with psycopg.connect(target, autocommit=True) as conn:
        with conn.transaction():
            row = conn.execute("SELECT EXISTS (SELECT 1 FROM jobs)").fetchone()
            if row is not None and not row[0]:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO jobs (id, kind, queue, status, error, payload, run_at,"
                        " created_at, updated_at, tags)"
                        " VALUES (%s, %s, %s, %s, %s, '{}', %s, %s, %s, '[\"team:a\"]')",
                        [(*job, T, T, T) for job in _old_jobs()],
                    )
            for kind, queue, status, count in fill:
                conn.execute(_PG_FILL, (kind, queue, status, status, T, T, T, count))
        conn.execute("VACUUM ANALYZE jobs")
        conn.execute("VACUUM ANALYZE job_tags")


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def pages(db: _db.Database, repeat: int) -> dict[str, float]:
    """Milliseconds of a page of 50 under each filter set of FILTERS, by its label."""
    found: dict[str, float] = {}
    for fs in FILTERS:
        filters: dict[str, Any] = fs

        def page(filters: dict[str, Any] = filters) -> object:
            return db.store.list_jobs(limit=50, **filters)

        found[label(fs)] = _median_ms(page, repeat)
    return found


def label(fs: dict[str, str]) -> str:
    """The filters as the CLI takes them, or "no filter"."""
    return " ".join(f"--{name} {value}" for name, value in fs.items()) or "no filter"


def measure(engine: str, rows: int, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Page times with rows succeeded jobs, then with rows failed jobs of report in mail too."""
    db = _databases.create(engine)
    try:
        _load(db, [("noop", "bulk", "succeeded", rows)])
        finished = pages(db, repeat)
        _load(db, [("report", "mail", "failed", rows)])
        return finished, pages(db, repeat)
    finally:
        db.close()


def main(argv: list[str] | None = None) -> None:
    """Measures the engines asked for and prints one table each."""
    parser = argparse.ArgumentParser(prog="python -m bench.listing_1m", description=__doc__)
    parser.add_argument("--engine", action="append", choices=("sqlite", "postgres"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    for engine in args.engine or ["sqlite", "postgres"]:
        finished, failed = measure(engine, args.rows, args.repeat)
        table = Table(
            f"{engine}: a page of 50, ms, median of {args.repeat}",
            [
                "filters",
                f"{args.rows:,} newer succeeded rows",
                f"and {args.rows:,} newer failed rows of report in mail",
            ],
        )
        for name, ms in finished.items():
            table.add(name, f"{ms:.2f}", f"{failed[name]:.2f}")
        print(table.render(markdown=True))
        worst = max(finished, key=finished.__getitem__)
        worst_failed = max(failed, key=failed.__getitem__)
        print(
            f"slowest: {worst} {finished[worst]:.2f} ms; with the failed rows too: "
            f"{worst_failed} {failed[worst_failed]:.2f} ms"
        )


if __name__ == "__main__":
    main()
