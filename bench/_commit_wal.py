"""What a runner's statement writes on PostgreSQL, by schema: ``python -m bench._commit_wal``.

PostgreSQL's counterpart of ``bench._commit_pages``. A change of status is
never a HOT update (status is in the claim's partial indexes' conditions),
so each index whose condition the new row meets gets a new entry at the
claim and again at the finish. For postgres/schema.sql as it is, without its
listing indexes, with listing indexes of other shapes, and (--rev) another
revision's, this runs the cycle's statement (FinishAndClaimJobs: the last
job's outcome and the next claim, 1 job a commit) over 3,000 jobs on a
schema of its own, then prints jobs/s (``synchronous_commit=off``, so that no
flush hides the index work) and the WAL a job writes. The WAL is read off
``EXPLAIN (ANALYZE, WAL)`` of 200 more cycles: the server's WAL position
counts every other session's writes too. Schemas are interleaved; medians of
the rounds.
"""

import argparse
import re
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

from bench._db import PG_URL
from bench._postgres_db import create_params, finish_and_claim_params
from bench._schema_cost import schema_at
from bench._stats import Table
from jobtable.db.postgres import jobs as pg_sql

ROOT = Path(__file__).resolve().parent.parent
JOBS = 3000
EXPLAINED = 200

_LISTING = re.compile(r"CREATE INDEX jobs_by_\w+ [^;]*;")


def variants(schema: str, rev: str | None) -> dict[str, str]:
    """The schemas measured, by label."""
    without = _LISTING.sub("", schema)
    by_kind = (
        "CREATE INDEX jobs_by_kind ON jobs (kind, seq){};\n"
        "CREATE INDEX jobs_by_queue ON jobs (queue, seq){};\n"
    )
    found = {
        "as it is": schema,
        "without listing indexes": without,
        "(kind, seq), (queue, seq)": without + by_kind.format("", ""),
        "(kind, seq), (queue, seq) of rows not running": without
        + by_kind.format(*[" WHERE status <> 'running'"] * 2),
    }
    if rev is not None:
        found[f"at {rev}"] = schema_at(rev, "postgres")
    return found


def _cycle(conn: Any, jobs: int, explain: bool) -> tuple[float, float, float]:
    """Seconds for jobs cycles of 1 job a commit, and the WAL bytes and records they wrote."""
    statement = pg_sql.FINISH_AND_CLAIM_JOBS
    prefix = "EXPLAIN (ANALYZE, WAL, FORMAT JSON) " if explain else ""
    with conn.pipeline():
        conn.execute("BEGIN")
        for _ in range(jobs):
            conn.execute(pg_sql.CREATE_JOB, create_params())
        conn.execute("COMMIT")
    previous: list[Any] = []
    wal = records = 0.0
    begin = time.perf_counter()
    for _ in range(jobs):
        rows = conn.execute(prefix + statement, finish_and_claim_params(previous, 1)).fetchall()
        if explain:
            wal += rows[0][0][0]["Plan"].get("WAL Bytes", 0)
            records += rows[0][0][0]["Plan"].get("WAL Records", 0)
            previous = conn.execute(
                "SELECT false, seq, id, kind, payload, attempt FROM jobs"
                " WHERE status = 'running' ORDER BY seq DESC LIMIT 1"
            ).fetchall()
        else:
            previous = [row for row in rows if not row[0]]
    elapsed = time.perf_counter() - begin
    return elapsed, wal, records


def measure(schema: str) -> tuple[float, float, float]:
    """Jobs/s of the cycle, WAL bytes and records a job, on a new schema of schema's SQL."""
    import psycopg

    name = f"jobtable_wal_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
        try:
            conn.execute(f'SET search_path = "{name}"')
            conn.execute("SET synchronous_commit = off")
            conn.execute(schema)
            elapsed, _, _ = _cycle(conn, JOBS, explain=False)
            _, wal, records = _cycle(conn, EXPLAINED, explain=True)
        finally:
            conn.execute(f'DROP SCHEMA "{name}" CASCADE')
    return JOBS / elapsed, wal / EXPLAINED, records / EXPLAINED


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._commit_wal")
    parser.add_argument("--rev", help="also the postgres/schema.sql of this git revision")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    schemas = variants((ROOT / "postgres" / "schema.sql").read_text(), args.rev)
    found: dict[str, list[tuple[float, float, float]]] = {label: [] for label in schemas}
    for _ in range(args.rounds):
        for label, schema in schemas.items():
            found[label].append(measure(schema))
    table = Table(
        f"PostgreSQL schema, claim and finish of 1 job a commit, synchronous_commit=off, "
        f"median of {args.rounds} interleaved round(s)",
        ["schema", "jobs/s", "WAL bytes a job", "WAL records a job"],
    )
    for label, runs in found.items():
        table.add(
            label,
            f"{statistics.median(rate for rate, _, _ in runs):,.0f}",
            f"{statistics.median(wal for _, wal, _ in runs):,.0f}",
            f"{statistics.median(records for _, _, records in runs):.1f}",
        )
    print(table.render(markdown=True))


if __name__ == "__main__":
    main()
