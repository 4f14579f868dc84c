"""A database written by schema version 3 opens, upgrades to the latest version and keeps every row.

The version 3 schemas are checked in as fixtures (tests/fixtures), copied
from the release that wrote them. Version 5 adds the runners table's host and
process, nullable: a runner registered before the upgrade has neither, so
its lease alone judges it, and a runner that starts afterwards records both.
"""

import asyncio
import pathlib
import sqlite3
from collections.abc import Callable

import jobtable
from jobtable._engines.sqlite.file import SCHEMA_VERSION
from jobtable._runner.process import this_process

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

T0 = "2025-01-02T03:04:05.000001Z"
T1 = "2025-01-02T03:04:06.000002Z"

COLUMNS = "id, kind, status, payload, runner, attempt, run_at, started_at, created_at, updated_at"
# (id, kind, status, payload, runner, attempt, started_at): w1 beat last in 2025.
V3_JOBS = [
    ("q-1", "ping", "queued", '{"n": 1}', None, 0, None),
    ("run-1", "ping", "running", '{"n": 2}', "w1", 1, T1),
]


def rows(job: tuple[object, ...]) -> tuple[object, ...]:
    job_id, kind, status, payload, runner, attempt, started = job
    return (job_id, kind, status, payload, runner, attempt, T0, started, T0, T1)


def start_and_run(store: jobtable.Store) -> None:
    """A runner starts on the upgraded store, records its process, and fails w1's job by lease."""

    async def ping(ctx: jobtable.JobContext[int], payload: dict[str, int]) -> int:
        return payload["n"]

    async def main() -> None:
        runner = jobtable.Runner(store, name="new", workers=1, poll_interval=0.05)
        runner.register("ping", ping)
        await runner.start()
        try:
            job = store.get("run-1")
            assert (job.status, job.error) == (
                jobtable.Status.FAILED,
                jobtable.MESSAGE_INTERRUPTED,
            )
            me = this_process()
            assert me is not None
            peers = store.engine.read(
                lambda q: q.list_runners_on_host(host=me.host, name="someone else")
            )
            assert [(p.name, p.process) for p in peers] == [("new", me.process)]
            for _ in range(600):
                if store.get("q-1").status is jobtable.Status.SUCCEEDED:
                    break
                await asyncio.sleep(0.05)
            assert store.get("q-1").result == 1
        finally:
            runner.stop()
            await runner.wait()

    asyncio.run(main())


def test_a_version_3_sqlite_file_is_upgraded_keeping_every_runner_and_job(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "schema_v3_sqlite.sql").read_text())
    conn.executemany(
        f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join(['?'] * 10)})",
        [rows(job) for job in V3_JOBS],
    )
    conn.execute("INSERT INTO runners VALUES ('w1', ?, ?)", (T0, T1))
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with jobtable.Store.open(path) as store:
        listed = store.engine.read(lambda q: q.list_runners(now=T1, lease=30.0))
        assert [r.name for r in listed] == ["w1"]
        start_and_run(store)
    jobtable.Store.open(tmp_path / "new.db").close()
    conn = sqlite3.connect(path)
    new = sqlite3.connect(tmp_path / "new.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = "SELECT name, type, \"notnull\" FROM pragma_table_info('runners')"
        assert conn.execute(columns).fetchall() == new.execute(columns).fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
        new.close()


def test_a_version_3_postgres_schema_is_upgraded_keeping_every_runner_and_job(
    new_pg_url: Callable[[], str],
) -> None:
    import psycopg

    from jobtable._engines.postgres.schema import SCHEMA_VERSION as PG_VERSION

    url = new_pg_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / "schema_v3_postgres.sql").read_text())
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join(['%s'] * 10)})",
                [rows(job) for job in V3_JOBS],
            )
        conn.execute("INSERT INTO runners VALUES ('w1', %s, %s)", (T0, T1))
        conn.execute("INSERT INTO jobtable_schema (version) VALUES (3)")
    with jobtable.Store.open(url) as store:
        start_and_run(store)
    fresh = new_pg_url()
    jobtable.Store.open(fresh).close()
    columns = (
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = 'runners' ORDER BY column_name"
    )
    with psycopg.connect(url, autocommit=True) as conn, psycopg.connect(fresh) as new:
        assert conn.execute("SELECT version FROM jobtable_schema").fetchone() == (PG_VERSION,)
        assert conn.execute(columns).fetchall() == new.execute(columns).fetchall()
