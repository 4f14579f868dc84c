"""What a schema's indexes cost every job, on raw SQL: ``python -m bench._schema_cost``.

Each schema gets a table of its own holding 100,000 finished rows, then jobs
go through their life 100 a transaction (inserted, claimed, finished), and
the rate is jobs per second. Commits do not flush (SQLite
``synchronous=NORMAL``, PostgreSQL ``synchronous_commit=off``), so the index
work is not hidden under the disk's. The schemas run in turn in each round,
interleaved, and the ratios are of medians to version 2's (tests/fixtures).

``--rev REV`` adds the latest schema of git revision REV (its schema.sql and
postgres/schema.sql), so a change is measured beside what it replaces.

``python -m bench._schema_cost --engine both --rounds 9 --rev main``
"""

import argparse
import datetime
import os
import secrets
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import _db

ROOT = Path(__file__).resolve().parent.parent
FINISHED = 100_000
BATCH = 100
T = "2026-01-01T00:00:00.000000Z"
PG_T = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
SCHEMA_FILES = {"sqlite": "schema.sql", "postgres": "postgres/schema.sql"}
V2_FILES = {
    "sqlite": "tests/fixtures/schema_v2_sqlite.sql",
    "postgres": "tests/fixtures/schema_v2_postgres.sql",
}


def schema_at(rev: str, engine: str) -> str:
    """The engine's schema as it was at git revision rev; exits naming rev if git has none."""
    shown = subprocess.run(
        ["git", "show", f"{rev}:{SCHEMA_FILES[engine]}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if shown.returncode != 0:
        raise SystemExit(
            f"--rev {rev}: git has no {SCHEMA_FILES[engine]} there: {shown.stderr.strip()}"
        )
    return shown.stdout


def schemas(engine: str, rev: str | None) -> dict[str, str]:
    """The schemas to compare, by label: version 2, REV's if given, the work tree's."""
    out = {"v2": (ROOT / V2_FILES[engine]).read_text()}
    if rev is not None:
        out[rev] = schema_at(rev, engine)
    out["work tree"] = (ROOT / SCHEMA_FILES[engine]).read_text()
    return out


def ids(count: int) -> list[str]:
    return [secrets.token_urlsafe(16) for _ in range(count)]


# --- SQLite ---------------------------------------------------------------------------------


def sqlite_table(schema: str, folder: str) -> sqlite3.Connection:
    conn = sqlite3.connect(os.path.join(folder, f"{secrets.token_hex(4)}.db"), isolation_level=None)
    conn.executescript(schema)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at,"
        " finished_at) VALUES (?, 'k', 'succeeded', '{}', ?, ?, ?, ?)",
        [(i, T, T, T, T) for i in ids(FINISHED)],
    )
    conn.execute("COMMIT")
    return conn


def sqlite_lives(conn: sqlite3.Connection, jobs: int) -> float:
    """Seconds for jobs to be inserted, claimed and finished, BATCH a transaction."""
    begin = time.perf_counter()
    for _ in range(jobs // BATCH):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO jobs (id, kind, payload, run_at, created_at, updated_at)"
            " VALUES (?, 'k', '{}', ?, ?, ?)",
            [(i, T, T, T) for i in ids(BATCH)],
        )
        claimed = conn.execute(
            "UPDATE jobs SET status = 'running', runner = 'r', attempt = attempt + 1,"
            " started_at = ?, updated_at = ? WHERE seq IN (SELECT seq FROM jobs"
            " WHERE status = 'queued' AND scheduled = 0 AND queue = 'default'"
            " ORDER BY priority, seq LIMIT ?) RETURNING id",
            (T, T, BATCH),
        ).fetchall()
        conn.executemany(
            "UPDATE jobs SET status = 'succeeded', result = '1', finished_at = ?, updated_at = ?"
            " WHERE id = ? AND status = 'running'",
            [(T, T, i) for (i,) in claimed],
        )
        conn.execute("COMMIT")
    return time.perf_counter() - begin


# --- PostgreSQL -----------------------------------------------------------------------------


def postgres_table(schema: str, made: list[tuple[Any, str]]) -> Any:
    import psycopg

    name = f"bench_schema_cost_{secrets.token_hex(4)}"
    conn = psycopg.connect(_db.PG_URL, autocommit=True)
    made.append((conn, name))
    conn.execute(f"CREATE SCHEMA {name}")
    conn.execute(f"SET search_path = {name}")
    conn.execute("SET synchronous_commit = off")
    conn.execute(schema)
    conn.execute(
        "INSERT INTO jobs (id, kind, status, payload, run_at, created_at, updated_at,"
        " finished_at) SELECT md5(g::text), 'k', 'succeeded', '{}', %s, %s, %s, %s"
        " FROM generate_series(1, %s) AS g",
        (PG_T, PG_T, PG_T, PG_T, FINISHED),
    )
    conn.execute("ANALYZE jobs")
    return conn


def postgres_lives(conn: Any, jobs: int) -> float:
    """Seconds for jobs to be inserted, claimed and finished, BATCH a transaction."""
    begin = time.perf_counter()
    for _ in range(jobs // BATCH):
        with conn.transaction():
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO jobs (id, kind, payload, run_at, created_at, updated_at)"
                    " VALUES (%s, 'k', '{}', %s, %s, %s)",
                    [(i, PG_T, PG_T, PG_T) for i in ids(BATCH)],
                )
            claimed = conn.execute(
                "UPDATE jobs SET status = 'running', runner = 'r', attempt = attempt + 1,"
                " started_at = %s, updated_at = %s WHERE seq IN (SELECT seq FROM jobs"
                " WHERE status = 'queued' AND scheduled = false AND queue = 'default'"
                " ORDER BY priority, seq LIMIT %s) RETURNING id",
                (PG_T, PG_T, BATCH),
            ).fetchall()
            conn.execute(
                "UPDATE jobs SET status = 'succeeded', result = '1', finished_at = %s,"
                " updated_at = %s WHERE id = ANY(%s) AND status = 'running'",
                (PG_T, PG_T, [i for (i,) in claimed]),
            )
    return time.perf_counter() - begin


def measure(engine: str, rounds: int, jobs: int, rev: str | None) -> dict[str, list[float]]:
    """Each schema's rates in jobs/s, one per round, the schemas interleaved."""
    rates: dict[str, list[float]] = {}
    made: list[tuple[Any, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        try:
            lives: Callable[[Any, int], float]
            if engine == "sqlite":
                conns = {k: sqlite_table(s, folder) for k, s in schemas(engine, rev).items()}
                lives = sqlite_lives
            else:
                conns = {k: postgres_table(s, made) for k, s in schemas(engine, rev).items()}
                lives = postgres_lives
            for _ in range(rounds):
                for label, conn in conns.items():
                    rates.setdefault(label, []).append(jobs / lives(conn, jobs))
        finally:
            for conn, name in made:
                conn.execute(f"DROP SCHEMA {name} CASCADE")
                conn.close()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=4_000, help="jobs per schema per round")
    parser.add_argument("--rev", help="a git revision whose latest schema to add")
    args = parser.parse_args()
    engines = ("sqlite", "postgres") if args.engine == "both" else (args.engine,)
    print("| engine | schema | jobs/s (median) | range | vs v2 |")
    print("|---|---|--:|--:|--:|")
    for engine in engines:
        rates = measure(engine, args.rounds, args.jobs, args.rev)
        base = statistics.median(rates["v2"])
        for label, values in rates.items():
            mid = statistics.median(values)
            print(
                f"| {engine} | {label} | {mid:,.0f} | {min(values):,.0f}-{max(values):,.0f}"
                f" | {mid / base:.2f}x |"
            )


if __name__ == "__main__":
    main()
