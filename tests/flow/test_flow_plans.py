"""Flow control's claims on PostgreSQL keep their cost off the size of the backlog.

On a table of 30,000 queued jobs, all of one limited queue and each with a
partition key: the limited claim reads the few rows it claims by primary
key (a join with its pick hashed the whole table, as the planner could not
size a pick whose LIMIT is counted at run time), and its price stays far
below JIT compilation's threshold; the partitioned claim, which the planner
prices by the backlog, is planned without JIT after SkipJit.
"""

import datetime
import json
from typing import Any

import pytest

import jobtable
from jobtable.db.postgres import flow

pytestmark = pytest.mark.postgres

PARAMS = {
    "queue": "q",
    "max_jobs": 16,
    "after_priority": -(2**31),
    "after_seq": 0,
    "concurrency": 8,
    "rate_limit": None,
    "rate_period": None,
    "runner": "r",
    "now": datetime.datetime(2025, 1, 2, tzinfo=datetime.UTC),
    "key_cap": 1,
    "partition_limit": 1,
    "rate_per_key": False,
}


def plan_of(conn: Any, sql: str) -> dict[str, Any]:
    rows = conn.execute("EXPLAIN (FORMAT JSON) " + sql, PARAMS).fetchall()
    plan: dict[str, Any] = rows[0][0][0]
    return plan


@pytest.fixture
def backlog(pg_url: str) -> str:
    import psycopg

    jobtable.Store.open(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (id, kind, queue, status, scheduled, payload, run_at, created_at,"
            " updated_at, partition_key)"
            " SELECT 'j' || n, 'k', 'q', 'queued', false, '{}', now(), now(), now(),"
            " (n % 100)::text FROM generate_series(0, 29999) AS n"
        )
        conn.execute("ANALYZE jobs")
    return pg_url


def test_the_limited_claim_reads_its_rows_by_key_at_a_price_that_needs_no_jit(
    backlog: str,
) -> None:
    import psycopg

    with psycopg.connect(backlog) as conn:
        plan = plan_of(conn, flow.CLAIM_LIMITED_JOBS)
        text = json.dumps(plan)
        threshold = float(conn.execute("SHOW jit_above_cost").fetchall()[0][0])
    assert '"Seq Scan"' not in text, text
    assert "jobs_pkey" in text, text
    assert plan["Plan"]["Total Cost"] < threshold / 10, plan["Plan"]["Total Cost"]


def test_the_partitioned_claim_is_planned_without_jit_after_skip_jit(backlog: str) -> None:
    import psycopg

    with psycopg.connect(backlog) as conn:
        if not conn.execute("SELECT pg_jit_available()").fetchall()[0][0]:
            pytest.skip("this server has no JIT")
        conn.execute("SET jit_above_cost = 1000")
        assert "JIT" in plan_of(conn, flow.CLAIM_PARTITIONED_JOBS)
        flow.Querier(conn).skip_jit()
        assert "JIT" not in plan_of(conn, flow.CLAIM_PARTITIONED_JOBS)
