"""A database written by schema version 1 opens, upgrades in place and keeps every job.

The version 1 schemas are checked in as fixtures (tests/fixtures), copied
from the release that wrote them, so the upgrade is tested against what
users' databases hold, not against a reconstruction.
"""

import asyncio
import datetime
import json
import pathlib
import sqlite3
from collections.abc import Callable

import jobtable
from jobtable._engines.sqlite.file import SCHEMA_VERSION

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

T0 = "2025-01-02T03:04:05.000001Z"
T1 = "2025-01-02T03:04:06.000002Z"

# (seq, id, kind, status, payload, result, error, runner, attempt, created_at, updated_at)
V1_JOBS = [
    (1, "queued-1", "thumbnail", "queued", '{"n": 1}', None, None, None, 0, T0, T0),
    (2, "running-1", "thumbnail", "running", '{"n": 2}', '{"done": 1}', None, "w1", 1, T0, T1),
    (3, "ok-1", "report", "succeeded", '{"n": 3}', '{"done": 3}', None, "w1", 1, T0, T1),
    (4, "bad-1", "report", "failed", '{"n": 4}', None, "That size is too large.", "w1", 1, T0, T1),
]


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


def check_kept(store: jobtable.Store) -> None:
    """Every version 1 job is there with every field, and the new ones filled in."""
    for seq, id, kind, status, payload, result, error, runner, attempt, created, updated in V1_JOBS:
        record = store.inspect(id)
        assert (record.seq, record.kind, record.status) == (seq, kind, jobtable.Status(status))
        assert (
            record.payload
            == jobtable.JobRecord.model_validate_json(record.model_dump_json()).payload
        )

        assert record.payload == json.loads(payload)
        assert record.result == (None if result is None else json.loads(result))
        assert record.error == error
        assert (record.runner, record.attempt) == (runner, attempt)
        assert record.created_at == _time(created)
        assert record.run_at == _time(created)
        assert (record.queue, record.priority, record.max_attempts) == ("default", 0, 1)
        assert record.started_at == (None if attempt == 0 else _time(updated))
        finished = status in ("succeeded", "failed")
        assert record.finished_at == (_time(updated) if finished else None)
        if error is None:
            assert record.errors == []
        else:
            assert record.errors == [
                jobtable.AttemptError(attempt=attempt, error=error, at=_time(updated))
            ]
        assert store.get(id).model_dump() == {
            "id": id,
            "kind": kind,
            "status": jobtable.Status(status),
            "result": None if result is None else json.loads(result),
            "error": error,
        }


def run_one(store: jobtable.Store) -> None:
    """The kept queued job still runs, and a new one with options is stored."""
    runner = jobtable.Runner(store, workers=1)
    kind = jobtable.Kind("thumbnail", dict[str, int], dict[str, int])

    @runner.handler(kind)
    async def handle(
        ctx: jobtable.JobContext[dict[str, int]], payload: dict[str, int]
    ) -> dict[str, int]:
        return {"done": payload["n"]}

    assert asyncio.run(runner.run_next()) == "queued-1"
    assert store.get("queued-1").result == {"done": 1}
    job_id = kind.enqueue(store, {"n": 5}, priority=3, queue="other")
    assert (store.inspect(job_id).priority, store.inspect(job_id).queue) == (3, "other")


def test_a_version_1_sqlite_file_is_upgraded_keeping_every_job(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v1_sqlite.sql").read_text())
    conn.executemany("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", V1_JOBS)
    conn.execute("INSERT INTO runners VALUES ('w1', ?, ?)", (T0, T1))
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with jobtable.Store.open(path) as store:
        check_kept(store)
        run_one(store)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # The rebuild of the jobs table does not skip the later steps of other tables.
        runners = "SELECT name, started_at, heartbeat_at, host, process FROM runners"
        assert conn.execute(runners).fetchall() == [("w1", T0, T1, None, None)]
        # The claim's partial index exists under its name, over queued rows.
        [index] = conn.execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'jobs_queued'"
        ).fetchone()
        assert "WHERE status = 'queued'" in index
        # Version 1 goes to the latest at once: the rebuild makes the latest table.
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
        assert {"jobs_unique", "jobs_by_kind", "jobs_by_rare_status_queue"} <= names
        assert "jobs_by_status_queue" not in names
        assert conn.execute(
            "SELECT count(*) FROM jobs WHERE unique_key IS NULL AND traceparent IS NULL"
        ).fetchone() == (len(V1_JOBS) + 1,)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_a_version_1_postgres_schema_is_upgraded_keeping_every_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION as PG_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v1_postgres.sql").read_text())
        with conn.cursor() as cur:
            # seq comes from the identity, in order, as version 1 wrote it.
            cur.executemany(
                "INSERT INTO jobs (id, kind, status, payload, result, error, runner, attempt,"
                " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [job[1:] for job in V1_JOBS],
            )
        conn.execute("INSERT INTO runners VALUES ('w1', %s, %s)", (T0, T1))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (1)")
    with jobtable.Store.open(url) as store:
        check_kept(store)
        run_one(store)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (PG_VERSION,)
        # This test's schema only: other tests drop theirs meanwhile, and
        # pg_indexes would fail reading an index dropped under it.
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes"
            " WHERE schemaname = current_schema() AND indexname = 'jobs_queued'"
        )
        [indexdef] = row.fetchone() or [""]
        assert "(status = 'queued'::text)" in indexdef
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        assert {"jobs_unique", "jobs_by_status_queue"} <= {row[0] for row in rows}
        assert conn.execute(
            "SELECT count(*) FROM jobs WHERE unique_key IS NULL AND traceparent IS NULL"
        ).fetchone() == (len(V1_JOBS) + 1,)
