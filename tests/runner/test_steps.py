"""Steps: a retried attempt resumes where the last one stopped.

A step (``ctx.step``, ``ctx.step_sync``) runs its function once per job; its
typed output is recorded under the attempt's claim, and a later attempt
gets it back instead of running the function again. Each test runs on both
engines; runs are counted in a file, not a mock.
"""

import base64
import pathlib
from collections.abc import Callable

import pytest
from pydantic import BaseModel, SecretStr

import jobtable
from jobtable._runner.run_operations import RecordStep
from jobtable._values import now
from jobtable.testing import drain

SECRET = "token=hunter2-from-a-dependency"
KEY = "k1:" + base64.b64encode(bytes(range(32))).decode()


class Fetched(BaseModel):
    rows: int
    source: str


ASYNC_RESUME = jobtable.Kind("async-resume", int, int, max_attempts=2)
PLAIN_RESUME = jobtable.Kind("plain-resume", int, int, max_attempts=2)


def counter(path: pathlib.Path) -> Callable[[], int]:
    """How many times a step function appended its line to path."""
    return lambda: len(path.read_text().splitlines()) if path.exists() else 0


def resumable(store: jobtable.Store, tmp_path: pathlib.Path) -> jobtable.Runner:
    """A runner whose async and plain kinds fail after their step at the first attempt."""
    runner = jobtable.Runner(store, workers=1)
    ran = tmp_path / "ran.txt"

    def fetch(n: int) -> Fetched:
        with ran.open("a") as f:
            f.write("fetch\n")
        return Fetched(rows=n, source="warehouse")

    async def afetch(n: int) -> Fetched:
        return fetch(n)

    @runner.handler(ASYNC_RESUME)
    async def run_async(ctx: jobtable.JobContext[int], payload: int) -> int:
        fetched = await ctx.step("fetch", afetch, payload)
        if ctx.attempt == 1:
            raise RuntimeError(SECRET)
        return fetched.rows

    @runner.handler(PLAIN_RESUME)
    def run_plain(ctx: jobtable.JobContext[int], payload: int) -> int:
        fetched = ctx.step_sync("fetch", fetch, payload)
        if ctx.attempt == 1:
            raise RuntimeError(SECRET)
        return fetched.rows

    return runner


@pytest.mark.parametrize("kind", [ASYNC_RESUME, PLAIN_RESUME], ids=["async", "plain"])
async def test_a_step_runs_once_across_retries_and_the_retry_gets_its_output(
    store: jobtable.Store, tmp_path: pathlib.Path, kind: jobtable.Kind[int, int]
) -> None:
    runner = resumable(store, tmp_path)
    job_id = kind.enqueue(store, 7)
    [record] = await drain(runner)
    assert (record.status, record.result, record.attempt) == ("succeeded", 7, 2)
    assert counter(tmp_path / "ran.txt")() == 1
    [step] = store.inspect(job_id).steps
    assert (step.name, step.output, step.attempt) == (
        "fetch",
        {"rows": 7, "source": "warehouse"},
        1,
    )


async def test_a_step_name_used_twice_in_an_attempt_is_refused_naming_it(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, workers=1)

    def one(n: int) -> int:
        return n + 1

    @runner.handler(jobtable.Kind("twice", int, str))
    async def twice(ctx: jobtable.JobContext[str], payload: int) -> str:
        await ctx.step("charge", one, payload)
        try:
            await ctx.step("charge", one, payload)
        except jobtable.StepError as err:
            return str(err)
        return "ran twice"

    job_id = jobtable.Kind("twice", int, str).enqueue(store, 1)
    [record] = await drain(runner)
    assert isinstance(record.result, str)
    assert record.result.startswith("step 'charge' is used twice in attempt 1")
    assert [s.name for s in store.inspect(job_id).steps] == ["charge"]


async def test_an_output_of_the_wrong_type_is_refused_and_nothing_is_stored(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store, workers=1)

    def lies(n: int) -> int:
        return "not a number"  # type: ignore[return-value]

    @runner.handler(jobtable.Kind("wrong", int, str))
    async def wrong(ctx: jobtable.JobContext[str], payload: int) -> str:
        try:
            await ctx.step("count", lies, payload)
        except jobtable.StepError as err:
            return str(err)
        return "stored"

    job_id = jobtable.Kind("wrong", int, str).enqueue(store, 1)
    [record] = await drain(runner)
    assert isinstance(record.result, str)
    assert record.result.startswith("step 'count': the output is not a valid int")
    assert store.inspect(job_id).steps == []


async def test_an_exception_in_the_step_records_nothing_and_its_text_is_never_stored(
    store: jobtable.Store, tmp_path: pathlib.Path
) -> None:
    runner = jobtable.Runner(store, workers=1)
    ran = counter(tmp_path / "ran.txt")

    def boom(n: int) -> int:
        with (tmp_path / "ran.txt").open("a") as f:
            f.write("boom\n")
        raise RuntimeError(SECRET)

    kind = jobtable.Kind("boom", int, int, max_attempts=2)

    @runner.handler(kind)
    async def run(ctx: jobtable.JobContext[int], payload: int) -> int:
        return await ctx.step("boom", boom, payload)

    job_id = kind.enqueue(store, 1)
    [record] = await drain(runner)
    assert (record.status, record.error) == ("failed", jobtable.MESSAGE_INTERNAL)
    # Nothing was recorded, so the retry ran the step again.
    assert ran() == 2
    inspected = store.inspect(job_id)
    assert inspected.steps == []
    assert SECRET not in inspected.model_dump_json()


async def test_a_step_without_a_return_type_is_a_type_error_before_it_runs(
    store: jobtable.Store, tmp_path: pathlib.Path
) -> None:
    runner = jobtable.Runner(store, workers=1)
    ran = tmp_path / "ran.txt"

    def untyped(n):  # type: ignore[no-untyped-def]
        ran.write_text("ran\n")
        return n

    @runner.handler(jobtable.Kind("untyped", int, str))
    async def run(ctx: jobtable.JobContext[str], payload: int) -> str:
        try:
            await ctx.step("untyped", untyped, payload)
        except TypeError as err:
            message = str(err)
        # returns= names the type instead, and a lambda is a step too.
        doubled = await ctx.step("doubled", lambda n: n * 2, payload, returns=int)
        return f"{message} / {doubled}"

    job_id = jobtable.Kind("untyped", int, str).enqueue(store, 4)
    [record] = await drain(runner)
    assert record.result == (
        "step 'untyped': test_a_step_without_a_return_type_is_a_type_error_before_it_runs."
        "<locals>.untyped has no return annotation; annotate it, or pass returns= with the "
        "output's type / 8"
    )
    assert not ran.exists()
    assert [(s.name, s.output) for s in store.inspect(job_id).steps] == [("doubled", 8)]


async def test_a_step_of_an_attempt_that_lost_its_claim_is_refused(
    store: jobtable.Store, tmp_path: pathlib.Path
) -> None:
    runner = jobtable.Runner(store, workers=1)
    refused: list[str] = []

    def seven(n: int) -> int:
        return 7

    kind = jobtable.Kind("fenced", int, int, max_attempts=2)

    @runner.handler(kind)
    async def run(ctx: jobtable.JobContext[int], payload: int) -> int:
        if ctx.attempt == 1:
            # The claim is lost, as a runner's whose lease ran out: its job
            # was interrupted and went back to its queue.
            interrupted = store.engine.write(
                lambda q: q.interrupt_job(error="lost", now=now(), id=ctx.id, attempt=1)
            )
            assert interrupted == 1
            try:
                await ctx.step("seven", seven, payload)
            except jobtable.NotRunning as err:
                refused.append(str(err))
            raise RuntimeError("the first attempt ends")
        return await ctx.step("seven", seven, payload)

    job_id = kind.enqueue(store, 1)
    await drain(runner)
    assert refused == [f"record step 'seven': job {job_id} is not running under this claim"]
    [step] = store.inspect(job_id).steps
    assert (step.name, step.attempt) == ("seven", 2)


def test_a_step_write_from_an_old_attempt_is_fenced_off(store: jobtable.Store) -> None:
    """A write of attempt 1 while attempt 2 holds the claim changes nothing."""
    kind = jobtable.Kind("old", int, int, max_attempts=3)
    job_id = kind.enqueue(store, 1)
    for attempt in (1, 2):
        [claimed] = store.engine.write(
            lambda q: q.finish_and_claim_jobs(
                outcomes=[], runner="r", queue="default", now=now(), max_jobs=1
            )[1]
        )
        assert claimed.attempt == attempt
        if attempt == 1:
            old = claimed
            store.engine.write(
                lambda q: q.interrupt_job(error="lost", now=now(), id=job_id, attempt=1)
            )
    with pytest.raises(jobtable.NotRunning):
        store.engine.write(RecordStep(old, "late", "1", now()))
    assert store.inspect(job_id).steps == []


async def test_the_last_partial_result_survives_a_retry(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=1)
    seen: list[Fetched | None] = []

    kind = jobtable.Kind("partial", int, Fetched, max_attempts=2)

    @runner.handler(kind)
    async def run(ctx: jobtable.JobContext[Fetched], payload: int) -> Fetched:
        seen.append(ctx.last_partial)
        if ctx.attempt == 1:
            await ctx.apublish(Fetched(rows=3, source="first"))
            seen.append(ctx.last_partial)
            raise RuntimeError(SECRET)
        return Fetched(rows=payload, source="second")

    kind.enqueue(store, 9)
    [record] = await drain(runner)
    assert record.status == "succeeded"
    first = Fetched(rows=3, source="first")
    assert seen == [None, first, first]


async def test_a_secret_output_needs_a_key_and_is_stored_encrypted(
    store_target: str, tmp_path: pathlib.Path
) -> None:
    class Token(BaseModel):
        value: SecretStr

    def issue(n: int) -> Token:
        return Token(value=SecretStr(SECRET))

    kind = jobtable.Kind("token", int, str, max_attempts=2)

    def runner_of(store: jobtable.Store) -> jobtable.Runner:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(kind)
        async def run(ctx: jobtable.JobContext[str], payload: int) -> str:
            try:
                token = await ctx.step("issue", issue, payload)
            except jobtable.SecretKeyError as err:
                return str(err)
            if ctx.attempt == 1:
                raise RuntimeError("the retry reads the step back, decrypted")
            return token.value.get_secret_value()[:5]

        return runner

    with jobtable.Store.open(store_target) as plain:
        job_id = kind.enqueue(plain, 1)
        [record] = await drain(runner_of(plain))
        assert record.result == (
            "step 'issue': the output holds secrets, which are stored encrypted, "
            "and no secret key is configured"
        )
        assert plain.inspect(job_id).steps == []
    with jobtable.Store.open(store_target, secret_keys=KEY) as keyed:
        job_id = kind.enqueue(keyed, 1)
        [record] = await drain(runner_of(keyed))
        assert record.result == "token"
        [step] = keyed.inspect(job_id).steps
        assert (step.output, step.attempt) == ({"value": "**********"}, 1)
        assert SECRET not in keyed.engine.read(lambda q: repr(q.list_job_steps(job_id=job_id)))


async def test_a_deleted_job_takes_its_steps_with_it(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=1)

    def one(n: int) -> int:
        return 1

    @runner.handler(jobtable.Kind("gone", int, int))
    async def run(ctx: jobtable.JobContext[int], payload: int) -> int:
        return await ctx.step("one", one, payload)

    job_id = jobtable.Kind("gone", int, int).enqueue(store, 1)
    await drain(runner)
    assert len(store.inspect(job_id).steps) == 1
    store.delete(job_id)
    assert store.engine.read(lambda q: list(q.list_job_steps(job_id=job_id))) == []


def test_a_step_write_retried_after_it_landed_succeeds_and_records_once(
    store: jobtable.Store,
) -> None:
    """A write whose reply was lost is sent again: it finds its own step and changes nothing."""
    kind = jobtable.Kind("again", int, int)
    job_id = kind.enqueue(store, 1)
    [claimed] = store.engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[], runner="r", queue="default", now=now(), max_jobs=1
        )[1]
    )
    write = RecordStep(claimed, "once", "1", now())
    store.engine.write(write)
    store.engine.write(write)
    assert [(s.name, s.output, s.attempt) for s in store.inspect(job_id).steps] == [("once", 1, 1)]
