"""The telemetry guide's logging set-up shows the job id and kind of every record about a job."""

import asyncio
import datetime
import io
import logging
import re

from doc_blocks import block_holding

import jobtable
from jobtable.testing import drain

GUIDE_BLOCK = block_holding("logging.Formatter(")
"""The guide's set-up (docs/guides/operating/telemetry.md), whose format the test uses."""


def guide_format() -> str:
    """The format string the guide's block passes to logging.Formatter."""
    match = re.search(r'logging\.Formatter\(\s*"([^"]+)"', GUIDE_BLOCK.text)
    assert match, f"{GUIDE_BLOCK.where}: no format string"
    return match[1]


def test_the_guides_format_names_the_job_id_and_kind_fields() -> None:
    assert GUIDE_BLOCK.document.name == "telemetry.md"
    assert "[job_id=%(job_id)s kind=%(kind)s]" in guide_format()
    assert 'defaults={"job_id": "-", "kind": "-"}' in GUIDE_BLOCK.text


async def test_the_guides_formatter_prints_the_job_id_and_kind_of_a_failed_job(
    store: jobtable.Store,
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(guide_format(), defaults={"job_id": "-", "kind": "-"}))
    logger = logging.getLogger("jobtable.test_logging_fields")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:

        async def broken(ctx: jobtable.JobContext[int], payload: int) -> int:
            raise RuntimeError("boom")

        runner = jobtable.Runner(store, logger=logger)
        job_id = runner.register("broken", broken).enqueue(0)
        await runner.run_next()
        logger.info("a record about no job")
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert any("job failed" in line and f"[job_id={job_id} kind=broken]" in line for line in lines)
    assert any(line.endswith("a record about no job [job_id=- kind=-]") for line in lines)


def capture(logger_name: str) -> tuple[logging.Logger, list[logging.LogRecord]]:
    """A logger whose records are kept in the list it returns."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger(logger_name)
    logger.handlers[:] = [Keep()]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, records


def job_fields(record: logging.LogRecord) -> tuple[object, object, object]:
    fields = record.__dict__
    return fields.get("job_id"), fields.get("kind"), fields.get("attempt")


async def test_an_attempt_that_will_be_retried_says_so_and_the_last_one_says_job_failed(
    store: jobtable.Store,
) -> None:
    logger, records = capture("jobtable.test_logging_fields.retried")
    flaky = jobtable.Kind(
        "flaky", int, int, max_attempts=2, retry=lambda attempt: datetime.timedelta(seconds=2)
    )
    runner = jobtable.Runner(store, logger=logger)

    @runner.handler(flaky)
    async def fail(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise RuntimeError("boom")

    job_id = flaky.enqueue(store, 0)
    await drain(runner)
    failures = [r for r in records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in failures] == [
        "attempt 1/2 failed, retrying in 2 s",
        "job failed",
    ]
    assert [job_fields(r) for r in failures] == [(job_id, "flaky", 1), (job_id, "flaky", 2)]
    assert all(r.exc_info is not None for r in failures)


async def test_every_record_about_a_job_carries_its_id_kind_and_attempt(
    store: jobtable.Store,
) -> None:
    logger, records = capture("jobtable.test_logging_fields.every")
    slow = jobtable.Kind("slow", int, int, max_attempts=3, timeout=0.01)
    runner = jobtable.Runner(store, logger=logger)

    @runner.handler(slow)
    async def sleep(ctx: jobtable.JobContext[int], payload: int) -> int:
        await asyncio.sleep(60)
        return payload

    job_id = slow.enqueue(store, 0)
    ghost_id = jobtable.Kind("ghost", int, int).enqueue(store, 0)
    await drain(runner)
    about_jobs = [r for r in records if "job_id" in r.__dict__]
    assert {job_fields(r) for r in about_jobs} == {
        (job_id, "slow", 1),
        (job_id, "slow", 2),
        (job_id, "slow", 3),
        (ghost_id, "ghost", 1),
    }
    messages = [r.getMessage() for r in about_jobs]
    assert "job timed out after 0.01 s; attempt 1/3 failed, retrying in " in messages[0]
    assert "no handler for job kind ghost" in messages
    # Every record not about a job is about the runner: none names a job in its text only.
    assert all(job_id not in r.getMessage() for r in records if "job_id" not in r.__dict__)


async def test_start_logs_the_store_the_queues_and_the_kinds_each_serves(
    store_target: str,
) -> None:
    logger, records = capture("jobtable.test_logging_fields.start")
    # PostgreSQL here trusts every client, so a password in the URL is accepted and ignored.
    target = store_target.replace("postgresql://postgres@", "postgresql://postgres:s3cretpw@")
    with jobtable.Store.open(target) as store:
        mail = jobtable.Kind("mail", str, str, queue="email")
        report = jobtable.Kind("report", int, int)
        runner = jobtable.Runner(store, queues={"default": 2, "email": 1}, logger=logger)
        runner.handler(mail)(send)
        runner.handler(report)(square)
        await runner.start()
        runner.stop()
        await runner.wait()
    [started] = [r.getMessage() for r in records if r.getMessage().startswith("runner started")]
    assert "s3cretpw" not in started
    # The SQLite file as an absolute path (the fixture's is one), the URL without its password.
    where = target.replace("s3cretpw", "***")
    assert f" on {where}; " in started
    assert started.endswith("queue 'default' (2 workers): report; queue 'email' (1 workers): mail")


async def send(ctx: jobtable.JobContext[str], to: str) -> str:
    return to


async def square(ctx: jobtable.JobContext[int], n: int) -> int:
    return n * n


async def test_start_warns_of_each_of_its_queues_that_is_paused(store: jobtable.Store) -> None:
    logger, records = capture("jobtable.test_logging_fields.paused")
    mail = jobtable.Kind("mail", str, str, queue="email")
    store.pause("email")
    store.pause("elsewhere")  # not one of the runner's queues: no word about it
    runner = jobtable.Runner(store, queues={"default": 1, "email": 1}, logger=logger)
    runner.handler(mail)(send)
    await runner.start()
    runner.stop()
    await runner.wait()
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert warnings == [
        "queue 'email' is paused: no runner starts its jobs until it is resumed "
        "(jobtable queues resume email, or store.resume)"
    ]
    store.resume("email")
    records.clear()
    runner = jobtable.Runner(store, queues={"default": 1, "email": 1}, logger=logger)
    runner.handler(mail)(send)
    await runner.start()
    runner.stop()
    await runner.wait()
    assert [r for r in records if r.levelno >= logging.WARNING] == []


async def test_a_job_that_succeeds_logs_nothing(store: jobtable.Store) -> None:
    logger, records = capture("jobtable.test_logging_fields.quiet")
    report = jobtable.Kind("report", int, int)
    runner = jobtable.Runner(store, logger=logger)
    runner.handler(report)(square)
    job_id = report.enqueue(store, 3)
    await drain(runner)
    assert store.get(job_id).status is jobtable.Status.SUCCEEDED
    assert [r for r in records if "job_id" in r.__dict__] == []
