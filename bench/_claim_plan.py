"""PostgreSQL's claim beside 0, 100k and 1M finished rows: ``python -m bench._claim_plan``.

The raw loop of the "finished rows" section's claim (FinishAndClaimJobs
with no outcome, 1 job a claim, 2,000 claims, each job left running) on a
schema filled as ``make bench`` fills it (finished rows, then VACUUM
ANALYZE), for the statement as it is and (--rev) as another revision
generated it, interleaved. It prints claims/s (median of the rounds) and,
after each loop, ``EXPLAIN (ANALYZE, BUFFERS)`` of one more claim: its
execution time and the shared buffers its finish and its pick read.
"""

import argparse
import ast
import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import _databases
from bench._postgres_db import PostgresDatabase, finish_and_claim_params
from bench._stats import Table
from jobtable.db.postgres import jobs as pg_sql

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = 2000


def statement_at(rev: str) -> str:
    """FinishAndClaimJobs as revision rev generated it."""
    source = subprocess.run(
        ["git", "show", f"{rev}:src/jobtable/db/postgres/jobs.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [
            "FINISH_AND_CLAIM_JOBS"
        ]:
            return str(ast.literal_eval(node.value))
    raise SystemExit(f"--rev {rev}: its generated jobs.py has no FINISH_AND_CLAIM_JOBS")


def _ctes(plan: dict[str, Any]) -> dict[str, int]:
    """Shared buffers hit or read by each CTE (InitPlan) of the plan, by its name."""
    found: dict[str, int] = {}
    for child in plan.get("Plans", []):
        name = child.get("Subplan Name", "")
        if name.startswith("CTE "):
            found[name[4:]] = child["Shared Hit Blocks"] + child["Shared Read Blocks"]
    return found


def one_loop(db: PostgresDatabase, statement: str) -> tuple[float, float, dict[str, int]]:
    """Claims/s of the loop, then the ms and CTE buffers of one more claim's EXPLAIN."""
    conn = db._conn
    db._inserts(CLAIMS + 1, 100)
    begin = time.perf_counter()
    for _ in range(CLAIMS):
        conn.execute(statement, finish_and_claim_params([], 1)).fetchone()
    rate = CLAIMS / (time.perf_counter() - begin)
    [[result]] = conn.execute(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, finish_and_claim_params([], 1)
    ).fetchall()
    explained = json.loads(result) if isinstance(result, str) else result
    return rate, explained[0]["Execution Time"], _ctes(explained[0]["Plan"])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._claim_plan")
    parser.add_argument("--rev", help="also FinishAndClaimJobs as this git revision had it")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="0,100000,1000000")
    args = parser.parse_args()
    statements = {"as it is": pg_sql.FINISH_AND_CLAIM_JOBS}
    if args.rev:
        statements[f"at {args.rev}"] = statement_at(args.rev)
    table = Table(
        f"PostgreSQL claim of 1 job, {CLAIMS:,} claims a loop, median of {args.rounds}",
        ["finished rows", "statement", "claims/s", "EXPLAIN ms", "buffers: finished", "picked"],
    )
    for size in (int(s) for s in args.sizes.split(",")):
        db = _databases.create("postgres")
        assert isinstance(db, PostgresDatabase)
        try:
            if size:
                db.fill_finished(size)
            keep = db.max_seq()
            runs: dict[str, list[tuple[float, float, dict[str, int]]]] = {s: [] for s in statements}
            for _ in range(args.rounds):
                for label, statement in statements.items():
                    runs[label].append(one_loop(db, statement))
                    db.reset(keep)
            for label, found in runs.items():
                table.add(
                    f"{size:,}",
                    label,
                    f"{statistics.median(r for r, _, _ in found):,.0f}",
                    f"{statistics.median(ms for _, ms, _ in found):.2f}",
                    str(found[-1][2].get("finished", 0)),
                    str(found[-1][2].get("picked", 0)),
                )
        finally:
            db.close()
    print(table.render(markdown=True))


if __name__ == "__main__":
    main()
