"""The throughput chart's query reads the index of finished rows, not the whole table.

The plans are asked of each engine for the generated statement itself. On
PostgreSQL sequential scans are disabled for the question, since a planner
may rightly prefer one on a small table: what is tested is that the index
can serve the query's filter.
"""

import pathlib
import sqlite3
from collections.abc import Callable

import jobtable
from jobtable.db.postgres import admin as postgres_admin
from jobtable.db.sqlite import admin as sqlite_admin


def test_sqlite_reads_the_finished_index_for_throughput(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "plan.db"
    jobtable.Store.open(path).close()
    conn = sqlite3.connect(path)
    try:
        plan = conn.execute(
            f"EXPLAIN QUERY PLAN {sqlite_admin.FINISHED_PER_MINUTE}", ("2026-01-01",)
        ).fetchall()
    finally:
        conn.close()
    details = " ".join(str(row[-1]) for row in plan)
    assert "USING INDEX jobs_finished" in details, details


def test_postgres_reads_the_finished_index_for_throughput(
    new_pg_url: Callable[[], str],
) -> None:
    import datetime

    import psycopg

    url = new_pg_url()
    jobtable.Store.open(url).close()
    with psycopg.connect(url) as conn:
        conn.execute("SET enable_seqscan = off")
        since = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
        rows = conn.execute(
            f"EXPLAIN {postgres_admin.FINISHED_PER_MINUTE}", {"since": since}
        ).fetchall()
    plan = "\n".join(str(row[0]) for row in rows)
    assert "jobs_finished" in plan, plan
