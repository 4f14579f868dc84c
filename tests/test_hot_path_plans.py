"""The hot path's statements read their own partial indexes, never the listing's.

The listing's indexes (jobs_by_*) hold queued and finished rows, keyed by
kind, queue or status, so a planner could take one for a claim, a staging or a prune: it
would read past every queued job of other queues, or sort every finished row.
Each statement here must name its own index in its plan, on both engines:
SQLite as it plans without ANALYZE's statistics (a store never runs ANALYZE),
and again with them; PostgreSQL on a table its ANALYZE has seen, holding many
finished rows beside a few queued, scheduled and running ones.
"""

import datetime
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import jobtable
from jobtable.db.postgres import admin as pg_admin
from jobtable.db.postgres import jobs as pg_jobs
from jobtable.db.sqlite import admin as sqlite_admin
from jobtable.db.sqlite import jobs as sqlite_jobs

# Each statement's name in the generated modules, and the index it must read.
# PostgreSQL's claim is FinishAndClaimJobs (it stores outcomes too), SQLite's
# ClaimNextJob.
CLAIM = {"sqlite": "CLAIM_NEXT_JOB", "postgres": "FINISH_AND_CLAIM_JOBS"}
EXPECTED = {
    "NEXT_RUN_AT": "jobs_scheduled",
    "STAGE_JOBS": "jobs_scheduled",
    "READY_RETRIES": "jobs_scheduled",
    "INTERRUPT_RUNNING_JOBS": "jobs_running",
    "INTERRUPT_JOBS_OF_DEAD_RUNNERS": "jobs_running",
    "LIST_RUNNING_JOBS": "jobs_running",
    "LIST_CANCEL_REQUESTS": "jobs_running",
    "DELETE_FINISHED_JOBS": "jobs_finished",
    "FINISHED_PER_MINUTE": "jobs_finished",
    "LIST_JOBS_RUNNING": "jobs_running",
}
LISTING = (
    "jobs_by_kind",
    "jobs_by_queue",
    "jobs_by_rare_status",
    "jobs_by_rare_status_kind",
    "jobs_by_rare_status_queue",
    "jobs_by_status_kind",
    "jobs_by_status_queue",
)
T = "2025-01-02T03:04:05.000001Z"


def sql_of(module_jobs: Any, module_admin: Any, name: str) -> str:
    sql: str = getattr(module_jobs, name, None) or getattr(module_admin, name)
    return sql


def indexes_named(plan: str) -> set[str]:
    return set(re.findall(r"\bjobs_\w+", plan))


# --- SQLite ---------------------------------------------------------------------------------


def sqlite_plan(conn: sqlite3.Connection, sql: str) -> str:
    count = max((int(n) for n in re.findall(r"\?(\d+)", sql)), default=0)
    rows = conn.execute("EXPLAIN QUERY PLAN " + sql, [1] * count).fetchall()
    return " | ".join(row[3] for row in rows)


def fill_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executemany(
            "INSERT INTO jobs (id, kind, queue, status, scheduled, runner, error, payload,"
            f" run_at, created_at, updated_at) VALUES (?, 'k', ?, ?, ?, ?, ?, '{{}}',"
            f" '{T}', '{T}', '{T}')",
            [
                (f"j{n}", ["default", "mail"][n % 2], status, scheduled, runner, error)
                for n in range(5_000)
                for status, scheduled, runner, error in [
                    [
                        ("succeeded", 0, None, None),
                        ("failed", 0, None, "x"),
                        ("queued", n % 3 == 0, None, None),
                        ("running", 0, "r", None),
                    ][0 if n % 50 else n // 50 % 4]
                ]
            ],
        )
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("analyzed", [False, True], ids=["no-statistics", "analyzed"])
def test_sqlite_hot_path_reads_its_own_index(tmp_path: Path, analyzed: bool) -> None:
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    fill_sqlite(path)
    conn = sqlite3.connect(path)
    try:
        if analyzed:
            conn.execute("ANALYZE")
        for name, index in [(CLAIM["sqlite"], "jobs_queued"), *EXPECTED.items()]:
            plan = sqlite_plan(conn, sql_of(sqlite_jobs, sqlite_admin, name))
            assert index in indexes_named(plan), (name, plan)
            assert not indexes_named(plan) & set(LISTING), (name, plan)
    finally:
        conn.close()


# --- PostgreSQL -----------------------------------------------------------------------------

VALUES: dict[str, object] = {
    "queue": "default",
    "runner": "r",
    "error": "interrupted",
    "max_jobs": 10,
    # A claim from the queue's head.
    "after_priority": -(2**31),
    "after_seq": 0,
    "kind": None,
    # A prune of the rows older than a day, before any of these.
    "before": T,
    "now": T,
    "cutoff": T,
    # The rows were all written now: a window of the last minutes.
    "since": datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5),
    "lease_seconds": 30.0,
    "ids": [],
    "attempts": [],
    "states": [],
    "results": None,
    "errors": None,
    "run_ats": None,
    "run_traces": None,
}


def pg_plan(conn: Any, sql: str) -> str:
    names = set(re.findall(r"%\((\w+)\)s", sql))
    params = {n: VALUES[n] for n in names}
    if "before" in names and "seq <" in sql:
        params["before"] = 1 << 62
    rows = conn.execute("EXPLAIN " + sql, params).fetchall()
    return " | ".join(row[0] for row in rows)


def test_postgres_hot_path_reads_its_own_index(pg_url: str) -> None:
    import psycopg

    jobtable.Store.open(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (id, kind, queue, status, scheduled, runner, error, payload,"
            " run_at, created_at, updated_at)"
            " SELECT 'j' || n, 'k', CASE WHEN n % 2 = 0 THEN 'default' ELSE 'mail' END, s.status,"
            " s.status = 'queued' AND n % 3 = 0, CASE WHEN s.status = 'running' THEN 'r' END,"
            " CASE WHEN s.status = 'failed' THEN 'x' END, '{}', now(), now(),"
            " now() - interval '1 hour' * (n % 2)"
            " FROM generate_series(0, 19999) AS n, LATERAL (SELECT CASE"
            "  WHEN n % 200 <> 0 THEN 'succeeded' WHEN n % 800 = 0 THEN 'failed'"
            "  WHEN n % 800 = 200 THEN 'queued' WHEN n % 800 = 400 THEN 'running'"
            "  ELSE 'queued' END AS status) AS s"
        )
        conn.execute("ANALYZE jobs")
        for name, index in [(CLAIM["postgres"], "jobs_queued"), *EXPECTED.items()]:
            plan = pg_plan(conn, sql_of(pg_jobs, pg_admin, name))
            assert index in indexes_named(plan), (name, plan)
            assert not indexes_named(plan) & set(LISTING), (name, plan)


def finish_plan(conn: Any, sql: str, running: list[tuple[str, int]]) -> str:
    """EXPLAIN ANALYZE of sql finishing the running jobs given (id, attempt) and claiming one."""
    params = {
        **{n: VALUES[n] for n in set(re.findall(r"%\((\w+)\)s", sql))},
        "ids": [job_id for job_id, _ in running],
        "attempts": [attempt for _, attempt in running],
        "states": ["succeeded"] * len(running),
        "results": ["1"] * len(running),
        "errors": [None] * len(running),
        "run_ats": [None] * len(running),
        "max_jobs": 1,
    }
    conn.execute("BEGIN")
    try:
        rows = conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params).fetchall()
    finally:
        conn.execute("ROLLBACK")
    return " | ".join(row[0] for row in rows)


def test_a_postgres_finish_reads_each_job_by_id_whatever_the_statistics_say(
    pg_url: str,
) -> None:
    """The statistics saw no running job; 2,000 run now: a finish still reads only its own.

    Told that one row is running, the planner would read every running row
    from jobs_running and match each to the outcomes, so that each claim
    read every running job.
    """
    import psycopg

    jobtable.Store.open(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        insert = (
            "INSERT INTO jobs (id, kind, status, runner, attempt, payload, run_at, created_at,"
            " updated_at) SELECT %s || n, 'k', %s, %s, 1, '{}', now(), now(), now()"
            " FROM generate_series(1, %s) AS n"
        )
        conn.execute(insert, ("done-", "succeeded", None, 20_000))
        conn.execute("ANALYZE jobs")
        conn.execute(insert, ("busy-", "running", "r", 2_000))
        conn.execute(insert, ("ready-", "queued", None, 10))
        plan = finish_plan(conn, pg_jobs.FINISH_AND_CLAIM_JOBS, [("busy-1", 1), ("busy-2", 1)])
        assert "jobs_id_key" in plan, plan
        assert "jobs_running" not in plan, plan
