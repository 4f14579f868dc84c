"""Runners that claim only the kinds they handle: ``Runner(..., only_kinds=True)``.

Two applications with different kinds on one store, or two versions of one
application during a rolling deploy, each claim only their own jobs; the
default runner claims every job of its queues and fails one it has no
handler for (test_run.py), as the original contract does.
"""

import asyncio
import re
from collections.abc import Awaitable, Callable

import pytest

import jobtable
from jobtable.db.postgres.jobs import FINISH_AND_CLAIM_JOBS, FINISH_AND_CLAIM_JOBS_OF_KINDS
from jobtable.db.sqlite.jobs import CLAIM_NEXT_JOB, CLAIM_NEXT_JOB_OF_KINDS

WaitUntil = Callable[..., Awaitable[None]]

mail = jobtable.Kind("mail", str, str)
report = jobtable.Kind("report", int, int)


async def send(ctx: jobtable.JobContext[str], to: str) -> str:
    return f"sent to {to}"


async def make_report(ctx: jobtable.JobContext[int], n: int) -> int:
    return n * n


def mail_app(store: jobtable.Store, *, only_kinds: bool = False) -> jobtable.Runner:
    runner = jobtable.Runner(
        store, name="mail-app", workers=2, poll_interval=0.05, only_kinds=only_kinds
    )
    runner.handler(mail)(send)
    return runner


async def test_a_runner_with_only_kinds_leaves_the_jobs_of_other_kinds_queued(
    store: jobtable.Store,
) -> None:
    report_id = report.enqueue(store, 3)
    mail_id = mail.enqueue(store, "ann")
    runner = mail_app(store, only_kinds=True)
    assert await runner.run_next() == mail_id
    assert await runner.run_next() is None
    record = store.inspect(report_id)
    assert (record.status, record.attempt) == (jobtable.Status.QUEUED, 0)


async def test_two_applications_on_one_store_each_run_only_their_own_jobs(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    mails = mail.enqueue_many(store, ["a", "b", "c"])
    reports = report.enqueue_many(store, [1, 2, 3])
    mailer = mail_app(store, only_kinds=True)
    reporter = jobtable.Runner(store, name="report-app", workers=2, only_kinds=True)
    reporter.handler(report)(make_report)
    await mailer.start()
    try:
        await wait_until(
            lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in mails)
        )
        # The mail application never touched a report job.
        assert [store.inspect(i).attempt for i in reports] == [0, 0, 0]
        await reporter.start()
        await wait_until(
            lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in reports)
        )
    finally:
        for runner in (mailer, reporter):
            runner.stop()
        await asyncio.gather(mailer.wait(), reporter.wait())
    assert [store.get(i).result for i in reports] == [1, 4, 9]
    assert {store.inspect(i).runner for i in mails} == {"mail-app"}


async def test_by_default_a_runner_fails_a_job_of_a_kind_it_has_no_handler_for(
    store: jobtable.Store,
) -> None:
    report_id = report.enqueue(store, 3)
    runner = mail_app(store)
    assert await runner.run_next() == report_id
    job = store.get(report_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, "no handler for job kind report")


def test_the_kind_filtered_claims_are_the_plain_ones_but_for_the_kind_condition() -> None:
    """The filtered claims are kept apart, so the plain ones pay nothing: they must not drift."""
    sqlite_filter = "        AND ready.kind IN (SELECT value FROM json_each(CAST(? AS TEXT)))\n"
    unnumbered = [re.sub(r"\?\d+", "?", sql) for sql in (CLAIM_NEXT_JOB_OF_KINDS, CLAIM_NEXT_JOB)]
    assert unnumbered[0].replace(sqlite_filter, "") == unnumbered[1]
    postgres_filter = "        AND ready.kind = ANY(%(kinds)s::text[])\n"
    assert FINISH_AND_CLAIM_JOBS_OF_KINDS.replace(postgres_filter, "") == FINISH_AND_CLAIM_JOBS


def test_only_kinds_must_be_a_bool(store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match="only_kinds"):
        jobtable.Runner(store, only_kinds="yes")  # type: ignore[arg-type]
