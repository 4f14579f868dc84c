"""The metrics of an instrumented store, and the secret guarantee over all its telemetry.

Counters of jobs enqueued and finished, the attempt duration histogram, and
the queue gauges, which read the backlog when the meter provider collects.
"""

import datetime
from collections.abc import Iterator

import pytest

import jobtable
import jobtable.otel
from otel.conftest import Telemetry

SECRET = "tok_live_5ecret_c0ffee"


def attrs(**values: object) -> frozenset[tuple[str, object]]:
    names = {
        "kind": "jobtable.job.kind",
        "queue": "messaging.destination.name",
        "status": "jobtable.job.status",
        "outcome": "jobtable.attempt.outcome",
    }
    return frozenset((names[key], value) for key, value in values.items())


async def test_jobs_are_counted_enqueued_and_finished_by_kind_queue_and_status(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    mail = jobtable.Kind("mail", str, str, queue="email")
    report = jobtable.Kind("report", int, int)
    runner = jobtable.Runner(store, queues={"default": 1, "email": 1})

    @runner.handler(mail)
    async def send(ctx: jobtable.JobContext[str], to: str) -> str:
        if to == "nobody":
            raise jobtable.Failure("no such address")
        return to

    @runner.handler(report)
    async def build(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    mail.enqueue_many(store, ["a", "nobody"])
    report.enqueue(store, 1)
    while await runner.run_next() is not None:
        pass

    assert telemetry.points("jobtable.jobs.enqueued") == {
        attrs(kind="mail", queue="email"): 2,
        attrs(kind="report", queue="default"): 1,
    }
    assert telemetry.points("jobtable.jobs.finished") == {
        attrs(kind="mail", queue="email", status="succeeded"): 1,
        attrs(kind="mail", queue="email", status="failed"): 1,
        attrs(kind="report", queue="default", status="succeeded"): 1,
    }
    assert telemetry.points("jobtable.attempt.duration") == {
        attrs(kind="mail", queue="email", outcome="succeeded"): 1,
        attrs(kind="mail", queue="email", outcome="failed"): 1,
        attrs(kind="report", queue="default", outcome="succeeded"): 1,
    }


async def test_a_retried_attempt_is_timed_but_its_job_is_not_finished(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    flaky = jobtable.Kind(
        "flaky", int, int, max_attempts=2, retry=lambda attempt: datetime.timedelta(0)
    )
    runner = jobtable.Runner(store)

    @runner.handler(flaky)
    async def run_flaky(ctx: jobtable.JobContext[int], payload: int) -> int:
        if ctx.attempt == 1:
            raise RuntimeError("boom")
        return payload

    flaky.enqueue(store, 1)
    await runner.run_next()
    await runner.run_next()

    assert telemetry.points("jobtable.attempt.duration") == {
        attrs(kind="flaky", queue="default", outcome="retried"): 1,
        attrs(kind="flaky", queue="default", outcome="succeeded"): 1,
    }
    assert telemetry.points("jobtable.jobs.finished") == {
        attrs(kind="flaky", queue="default", status="succeeded"): 1
    }


async def test_no_payload_result_or_exception_text_reaches_any_span_or_metric(
    store: jobtable.Store, telemetry: Telemetry
) -> None:
    leak = jobtable.Kind("leak", str, str, max_attempts=2, retry=lambda a: datetime.timedelta(0))
    echo = jobtable.Kind("echo", str, str)
    runner = jobtable.Runner(store)

    @runner.handler(leak)
    def raise_secret(ctx: jobtable.JobContext[str], key: str) -> str:
        raise RuntimeError(f"GET https://api.example/v1?token={SECRET} returned 500")

    @runner.handler(echo)
    async def echo_secret(ctx: jobtable.JobContext[str], text: str) -> str:
        await ctx.apublish(f"partial {text}")
        return f"result {text}"

    leak.enqueue(store, "key")
    echo.enqueue(store, f"payload {SECRET}")
    while await runner.run_next() is not None:
        pass

    assert len(telemetry.spans("run leak")) == 2
    assert telemetry.span("run echo").status.is_ok
    assert SECRET not in telemetry.text()
    assert "token" not in telemetry.text()


@pytest.fixture
def clocked(store_target: str) -> Iterator[tuple[jobtable.Store, list[datetime.datetime]]]:
    """A store whose clock reads now[0], and the list to move it with."""
    now = [datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)]
    with jobtable.Store.open(store_target, clock=lambda: now[0]) as store:
        yield store, now
        jobtable.otel.uninstrument(store)


async def test_the_queue_gauges_report_each_queues_ready_jobs_and_its_oldest_ones_wait(
    clocked: tuple[jobtable.Store, list[datetime.datetime]],
) -> None:
    store, now = clocked
    telemetry = Telemetry()
    telemetry.instrument(store)
    work = jobtable.Kind("work", int, int)
    work.enqueue(store, 1)
    work.enqueue(store, 2, queue="email")
    now[0] += datetime.timedelta(seconds=30)
    work.enqueue(store, 3)
    work.enqueue(store, 4, delay=datetime.timedelta(seconds=10))  # due at 40 s
    work.enqueue(store, 5, delay=datetime.timedelta(hours=1))  # not due: no backlog
    now[0] += datetime.timedelta(seconds=60)

    assert telemetry.points("jobtable.queue.depth") == {
        attrs(queue="default"): 3,
        attrs(queue="email"): 1,
    }
    assert telemetry.points("jobtable.queue.oldest_age") == {
        attrs(queue="default"): 90.0,
        attrs(queue="email"): 90.0,
    }

    # The email queue first: run_next takes the job of the first queue with one.
    runner = jobtable.Runner(store, queues={"email": 1, "default": 1})
    runner.register("work", lambda_free_handler)
    await runner.run_next()

    assert telemetry.points("jobtable.queue.depth")[attrs(queue="email")] == 0
    assert telemetry.points("jobtable.queue.oldest_age")[attrs(queue="email")] == 0.0


async def lambda_free_handler(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


async def test_an_uninstrumented_or_closed_store_is_no_longer_observed(
    clocked: tuple[jobtable.Store, list[datetime.datetime]],
) -> None:
    store, _ = clocked
    telemetry = Telemetry()
    telemetry.instrument(store)
    jobtable.Kind("work", int, int).enqueue(store, 1)
    assert telemetry.points("jobtable.queue.depth") == {attrs(queue="default"): 1}

    jobtable.otel.uninstrument(store)
    assert telemetry.points("jobtable.queue.depth") == {}

    telemetry.instrument(store)
    store.close()
    assert telemetry.points("jobtable.queue.depth") == {}
