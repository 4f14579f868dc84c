"""A partitioned claim on a fresh PostgreSQL table, before and after a runner's start.

``python -m bench._flow_statistics [--jobs 20000] [--seconds 6]``

Enqueues jobs of the flow section's partitioned case (100 keys, partition
limit 1) into a fresh schema, prints ``EXPLAIN (ANALYZE, BUFFERS)`` of one
``ClaimPartitionedJobs`` (rolled back) with the indexes it read, runs a
16-worker runner for a few seconds and prints its rate, then explains the
claim again. A runner gathers the table's statistics when it starts if the
table outgrew them (``JobsStatisticsStale``), so the first plan is the one
a claim got before that, and the second the one it gets now.
"""

import argparse
import asyncio
import datetime
import re
import time
from typing import Any

import jobtable
from bench import _db
from bench._flow import WORKERS, _declared, _kind
from bench._jobs import Ping
from bench._postgres_db import PostgresDatabase
from jobtable.db.postgres.flow import CLAIM_PARTITIONED_JOBS

QUEUE = "flow-partitions-0"


def explain(db: PostgresDatabase, label: str) -> None:
    """Prints one claim's time and the indexes its plan scanned, rolled back."""
    params: dict[str, Any] = {
        "queue": QUEUE,
        "rate_period": None,
        "key_cap": 16,
        "partition_limit": 1,
        "rate_per_key": False,
        "rate_limit": None,
        "max_jobs": 16,
        "after_priority": -(2**31),
        "after_seq": 0,
        "concurrency": None,
        "runner": "explain",
        "now": datetime.datetime.now(datetime.UTC),
    }
    with db._psycopg.connect(db.target) as conn:
        conn.execute("SET LOCAL jit = off")
        rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + CLAIM_PARTITIONED_JOBS, params)
        lines = [row[0] for row in rows.fetchall()]
        conn.rollback()
    scans = sorted({m.group(1) for line in lines if (m := re.search(r"using (\w+) on", line))})
    total = next(line for line in lines if line.startswith("Execution Time"))
    print(f"{label}: {total}; indexes read: {', '.join(scans)}")


async def drain(store: jobtable.Store, seconds: float) -> float:
    """Runs the partitioned case's runner for seconds; returns jobs finished a second."""
    kind = _kind("partitions", QUEUE)
    runner = jobtable.Runner(
        store, queues={QUEUE: WORKERS}, name="flow-statistics", flow=_declared("partitions", QUEUE)
    )

    @runner.handler(kind)
    async def noop(ctx: jobtable.JobContext[None], payload: Ping) -> None:
        return None

    begin = time.perf_counter()
    await runner.start()
    await asyncio.sleep(seconds)
    runner.stop()
    await runner.wait()
    elapsed = time.perf_counter() - begin
    done = store.counts().get(QUEUE, {}).get(jobtable.Status.SUCCEEDED, 0)
    return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._flow_statistics")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--pg-url", default=_db.PG_URL)
    args = parser.parse_args()
    db = PostgresDatabase.create(args.pg_url)
    try:
        kind = _kind("partitions", QUEUE)
        payloads = [Ping(t=i) for i in range(args.jobs)]
        for at in range(0, args.jobs, _db.BATCH):
            kind.enqueue_many(db.store, payloads[at : at + _db.BATCH])
        explain(db, f"{args.jobs:,} queued, fresh table")
        rate = asyncio.run(drain(db.store, args.seconds))
        print(f"a runner's first {args.seconds:g} s: {rate:,.0f} jobs/s")
        explain(db, "after the runner's start")
    finally:
        db.close()


if __name__ == "__main__":
    main()
