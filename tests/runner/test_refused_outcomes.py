"""An outcome the database refuses for good fails the job, instead of being retried for ever.

A publish it refuses for good raises in the handler at once: retrying is for
transient errors.

A trigger the test adds makes the real database refuse a job's success with
a non-transient error (a constraint abort on SQLite, a raised exception on
PostgreSQL), as a check or a data error would. Transient errors, which the
runner does retry, are tested in test_faults.py.
"""

import contextlib
import logging
import sqlite3

import pytest

import jobtable

REFUSE_SUCCESS = {
    "sqlite": [
        "CREATE TRIGGER refuse_success BEFORE UPDATE OF status ON jobs "
        "WHEN NEW.status = 'succeeded' "
        "BEGIN SELECT RAISE(ABORT, 'success refused'); END"
    ],
    "postgres": [
        "CREATE FUNCTION refuse_success() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'success refused'; END $$",
        "CREATE TRIGGER refuse_success BEFORE UPDATE ON jobs FOR EACH ROW "
        "WHEN (NEW.status = 'succeeded') EXECUTE FUNCTION refuse_success()",
    ],
}
REFUSE_ANY_FINISH = {
    "sqlite": [
        "CREATE TRIGGER refuse_finish BEFORE UPDATE OF status ON jobs "
        "WHEN NEW.status IN ('succeeded', 'failed') "
        "BEGIN SELECT RAISE(ABORT, 'finish refused'); END"
    ],
    "postgres": [
        "CREATE FUNCTION refuse_finish() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'finish refused'; END $$",
        "CREATE TRIGGER refuse_finish BEFORE UPDATE ON jobs FOR EACH ROW "
        "WHEN (NEW.status IN ('succeeded', 'failed')) EXECUTE FUNCTION refuse_finish()",
    ],
}

REFUSE_PUBLISH = {
    "sqlite": [
        "CREATE TRIGGER refuse_publish BEFORE UPDATE OF result ON jobs "
        "WHEN NEW.status = 'running' AND NEW.result IS NOT OLD.result "
        "BEGIN SELECT RAISE(ABORT, 'publish refused'); END"
    ],
    "postgres": [
        "CREATE FUNCTION refuse_publish() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'publish refused'; END $$",
        "CREATE TRIGGER refuse_publish BEFORE UPDATE ON jobs FOR EACH ROW "
        "WHEN (NEW.status = 'running' AND NEW.result IS DISTINCT FROM OLD.result) "
        "EXECUTE FUNCTION refuse_publish()",
    ],
}


def execute(engine: str, target: str, statements: list[str]) -> None:
    if engine == "postgres":
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())
        return
    with contextlib.closing(sqlite3.connect(target, isolation_level=None)) as conn:
        for statement in statements:
            conn.execute(statement)


async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
    await ctx.apublish("half")
    return "done"


async def test_a_refused_success_fails_the_job_with_the_internal_message(
    engine: str, store: jobtable.Store, store_target: str, caplog: pytest.LogCaptureFixture
) -> None:
    execute(engine, store_target, REFUSE_SUCCESS[engine])
    runner = jobtable.Runner(store)
    job_id = runner.register("work", work).enqueue(0)
    assert await runner.run_next() == job_id
    job = runner.get(job_id)
    # The failed job keeps the partial result it published.
    assert (job.status, job.error, job.result) == (
        jobtable.Status.FAILED,
        jobtable.MESSAGE_INTERNAL,
        "half",
    )
    refused = [r for r in caplog.records if "the database refused it" in r.getMessage()]
    assert [r.__dict__["job_id"] for r in refused] == [job_id]
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


async def test_an_outcome_refused_even_as_internal_is_given_up_not_retried_for_ever(
    engine: str, store: jobtable.Store, store_target: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The job stays running for the lost-claim sweep (or the next start) to fail it."""
    caplog.set_level(logging.WARNING, logger="jobtable")
    execute(engine, store_target, REFUSE_ANY_FINISH[engine])
    runner = jobtable.Runner(store)
    job_id = runner.register("work", work).enqueue(0)
    assert await runner.run_next() == job_id
    assert runner.get(job_id).status is jobtable.Status.RUNNING
    assert [r for r in caplog.records if "giving up" in r.getMessage()]


async def test_a_publish_the_database_refuses_for_good_raises_at_once_and_is_not_retried(
    engine: str, store: jobtable.Store, store_target: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobtable")
    execute(engine, store_target, REFUSE_PUBLISH[engine])
    raised: list[jobtable.StoreError] = []

    def publish_then_finish(ctx: jobtable.JobContext[str], payload: int) -> str:
        try:
            ctx.publish("half")
        except jobtable.StoreError as err:
            raised.append(err)
        return "done"

    runner = jobtable.Runner(store)
    job_id = runner.register("work", publish_then_finish).enqueue(0)
    assert await runner.run_next() == job_id
    assert [err.transient for err in raised] == [False]
    assert not [r for r in caplog.records if "publish job result; retrying" in r.getMessage()]
    job = runner.get(job_id)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "done")
