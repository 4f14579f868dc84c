"""Results are data: checked as strictly as payloads, limited in size, read back typed.

Each test runs on both engines (the ``store`` fixture) and drives the job
with ``run_next``, which returns once the outcome is stored.
"""

import logging
import math

import pydantic
import pytest

import jobtable


class Point(pydantic.BaseModel):
    x: float


class Other(pydantic.BaseModel):
    y: int


class Text(pydantic.BaseModel):
    text: str


def failed_with(runner: jobtable.Runner, job_id: str) -> tuple[jobtable.Status, str | None]:
    job = runner.get(job_id)
    return job.status, job.error


def job_failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("job failed")]


@pytest.mark.parametrize(
    "returned",
    [
        pytest.param(Other(y=1), id="another-model"),
        pytest.param(None, id="none-where-R-forbids-it"),
        pytest.param(Point(x=math.nan), id="nan"),
        pytest.param(Point(x=math.inf), id="infinity"),
        pytest.param({"x": 1.0}, id="a-dict-not-the-model"),
    ],
)
async def test_a_result_that_is_not_a_valid_r_fails_the_job_with_the_internal_message(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture, returned: object
) -> None:
    async def handler(ctx: jobtable.JobContext[Point], payload: int) -> Point:
        return returned  # type: ignore[return-value]

    runner = jobtable.Runner(store)
    job_id = runner.register("point", handler).enqueue(0)
    assert await runner.run_next() == job_id
    assert failed_with(runner, job_id) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert runner.get(job_id).result is None
    [record] = job_failures(caplog)
    assert record.__dict__["job_id"] == job_id
    assert isinstance(record.exc_info and record.exc_info[1], jobtable.ResultError)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
async def test_a_non_finite_float_is_refused_even_where_r_allows_none(
    store: jobtable.Store, bad: float
) -> None:
    """pydantic dumps NaN as null, which float | None would read back as None: a changed value."""

    def handler(ctx: jobtable.JobContext[float | None], payload: int) -> float | None:
        return bad

    runner = jobtable.Runner(store)
    kind = runner.register("maybe", handler)
    job_id = kind.enqueue(0)
    await runner.run_next()
    assert failed_with(runner, job_id) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    with pytest.raises(jobtable.PayloadError, match="NaN or infinity"):
        runner.register("maybe-payload", lambda_handler).enqueue(bad)


def lambda_handler(ctx: jobtable.JobContext[int], payload: float | None) -> int:
    return 0


async def test_publishing_an_invalid_partial_raises_result_error_at_the_call(
    store: jobtable.Store,
) -> None:
    raised: list[Exception] = []

    async def handler(ctx: jobtable.JobContext[Point], payload: int) -> Point:
        for bad in (Other(y=1), Point(x=math.nan)):
            try:
                await ctx.apublish(bad)  # type: ignore[arg-type]
            except jobtable.ResultError as err:
                raised.append(err)
        return Point(x=1)

    runner = jobtable.Runner(store)
    job_id = runner.register("point", handler).enqueue(0)
    await runner.run_next()
    assert len(raised) == 2
    assert runner.get(job_id).result == {"x": 1.0}


async def test_an_oversized_final_result_fails_the_job_with_a_message_saying_so(
    store: jobtable.Store,
) -> None:
    async def handler(ctx: jobtable.JobContext[Text], payload: int) -> Text:
        return Text(text="x" * payload)

    runner = jobtable.Runner(store, max_result_bytes=100)
    kind = runner.register("text", handler)
    small, large = kind.enqueue(80), kind.enqueue(200)
    await runner.run_next()
    await runner.run_next()
    assert runner.get(small).status is jobtable.Status.SUCCEEDED
    status, error = failed_with(runner, large)
    assert status is jobtable.Status.FAILED
    assert error == "result is 211 bytes, over the limit of 100 (max_result_bytes)"


async def test_an_oversized_publish_raises_at_the_call_and_stores_nothing(
    store: jobtable.Store,
) -> None:
    raised: list[jobtable.ResultError] = []

    def handler(ctx: jobtable.JobContext[Text], payload: int) -> Text:
        ctx.publish(Text(text="small"))
        try:
            ctx.publish(Text(text="x" * 1000))
        except jobtable.ResultError as err:
            raised.append(err)
        raise jobtable.Failure("gave up")

    runner = jobtable.Runner(store, max_result_bytes=100)
    job_id = runner.register("text", handler).enqueue(0)
    await runner.run_next()
    assert [str(e) for e in raised] == [
        "result is 1011 bytes, over the limit of 100 (max_result_bytes)"
    ]
    job = runner.get(job_id)
    # A failed job keeps the last partial result it published.
    assert (job.status, job.error, job.result) == (
        jobtable.Status.FAILED,
        "gave up",
        {"text": "small"},
    )


def test_the_default_result_limit_is_one_mebibyte(store: jobtable.Store) -> None:
    assert jobtable.Runner(store).max_result_bytes == 1 << 20


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_a_result_limit_that_is_not_a_positive_int_is_refused(
    store: jobtable.Store, limit: object
) -> None:
    with pytest.raises(ValueError, match="max_result_bytes"):
        jobtable.Runner(store, max_result_bytes=limit)  # type: ignore[arg-type]


async def test_reading_a_stored_result_that_no_longer_validates_names_the_job_and_the_kind(
    store: jobtable.Store,
) -> None:
    async def old(ctx: jobtable.JobContext[Other], payload: int) -> Other:
        return Other(y=1)

    async def new(ctx: jobtable.JobContext[Point], payload: int) -> Point:
        return Point(x=1)

    before = jobtable.Runner(store)
    job_id = before.register("shape", old).enqueue(0)
    await before.run_next()
    after = jobtable.Runner(store).register("shape", new)
    with pytest.raises(jobtable.ResultError) as raised:
        after.get(job_id)
    assert f"job {job_id!r} of kind 'shape'" in str(raised.value)
    with pytest.raises(jobtable.ResultError):
        await after.aget(job_id)
    # The untyped read still works, and the stored result is unchanged.
    assert before.get(job_id).result == {"y": 1}


async def test_nul_and_non_ascii_text_inside_results_and_payloads_round_trip(
    store: jobtable.Store,
) -> None:
    """JSON escapes NUL as \\u0000, which both engines' text columns store as it is."""

    async def echo(ctx: jobtable.JobContext[Text], payload: Text) -> Text:
        await ctx.apublish(Text(text=payload.text + "?"))
        return Text(text=payload.text + "!")

    runner = jobtable.Runner(store)
    kind = runner.register("echo", echo)
    job_id = kind.enqueue(Text(text="a\x00b é"))
    await runner.run_next()
    assert kind.get(job_id).result == Text(text="a\x00b é!")


def test_a_lone_surrogate_in_a_payload_is_refused_with_payload_error(
    store: jobtable.Store,
) -> None:
    async def echo(ctx: jobtable.JobContext[Text], payload: Text) -> Text:
        return payload

    kind = jobtable.Runner(store).register("echo", echo)
    with pytest.raises(jobtable.PayloadError, match="surrogates not allowed"):
        kind.enqueue(Text(text="\ud800"))


async def test_a_lone_surrogate_in_a_result_fails_the_job_with_the_internal_message(
    store: jobtable.Store,
) -> None:
    async def handler(ctx: jobtable.JobContext[Text], payload: int) -> Text:
        return Text(text="\ud800")

    runner = jobtable.Runner(store)
    job_id = runner.register("text", handler).enqueue(0)
    await runner.run_next()
    assert failed_with(runner, job_id) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
