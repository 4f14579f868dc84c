"""A runner's hooks around each attempt and on each outcome, and what a handler reads of its labels.

Every test runs on both engines, one job at a time (``run_next``).
"""

import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple

import pydantic
import pytest

import jobtable
from jobtable._runner.hooks import AttemptOutcome, CallNext
from jobtable._runner.run_operations import Finish


class ClaimedJob(NamedTuple):
    id: str
    kind: str
    attempt: int
    workflow_id: str | None = None


class Tenant(pydantic.BaseModel):
    tenant: str


TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")


async def test_a_handler_reads_its_tags_and_typed_meta_from_ctx(store: jobtable.Store) -> None:
    kind = jobtable.Kind("work", int, str, tags=["k"], meta=Tenant)
    runner = jobtable.Runner(store)

    @runner.handler(kind)
    async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        assert isinstance(ctx.meta, Tenant)
        return f"{ctx.meta.tenant} {ctx.tags}"

    job_id = kind.enqueue(store, 1, tags=["e"], meta=Tenant(tenant="acme"))
    assert await runner.run_next() == job_id
    assert runner.get(job_id).result == "acme ['k', 'e']"


async def test_a_plain_handler_without_a_meta_model_reads_its_meta_as_a_dict(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)

    def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        return f"{ctx.meta} {ctx.tags}"

    kind = runner.register("work", work)
    job_id = kind.enqueue(1, meta={"who": "ops"})
    untagged = kind.enqueue(2)
    assert await runner.run_next() == job_id
    assert await runner.run_next() == untagged
    assert runner.get(job_id).result == "{'who': 'ops'} []"
    assert runner.get(untagged).result == "{} []"


async def test_attempt_hooks_wrap_the_handler_first_added_outermost(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    seen: list[str] = []

    @runner.hooks.around_attempt
    async def outer(ctx: jobtable.JobContext[Any], call_next: CallNext) -> Any:
        seen.append(f"outer in {ctx.kind} {ctx.meta}")
        result = await call_next()
        seen.append(f"outer out {result}")
        return result

    @runner.hooks.around_attempt
    @contextlib.contextmanager
    def middle(ctx: jobtable.JobContext[Any]) -> Iterator[None]:
        seen.append("middle in")
        token = TENANT.set(ctx.meta["tenant"])
        try:
            yield
        finally:
            TENANT.reset(token)
            seen.append("middle out")

    @runner.hooks.around_attempt
    @contextlib.asynccontextmanager
    async def inner(ctx: jobtable.JobContext[Any]) -> AsyncIterator[None]:
        seen.append("inner in")
        yield
        seen.append("inner out")

    def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        # A plain handler runs in a thread and sees the contextvars a hook set.
        seen.append(f"handler {TENANT.get()}")
        return "done"

    job_id = runner.register("work", work).enqueue(1, meta={"tenant": "acme"})
    assert await runner.run_next() == job_id
    assert seen == [
        "outer in work {'tenant': 'acme'}",
        "middle in",
        "inner in",
        "handler acme",
        "inner out",
        "middle out",
        "outer out done",
    ]
    assert runner.get(job_id).result == "done"


async def test_an_attempt_hook_that_raises_fails_the_attempt_with_the_internal_message_only(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="jobtable")
    runner = jobtable.Runner(store)
    ran: list[int] = []

    @runner.hooks.around_attempt
    async def broken(ctx: jobtable.JobContext[Any], call_next: CallNext) -> Any:
        raise RuntimeError("secret-ish hook detail")

    async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        ran.append(payload)
        return "done"

    job_id = runner.register("work", work).enqueue(1)
    assert await runner.run_next() == job_id
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, jobtable.MESSAGE_INTERNAL)
    assert ran == []
    assert "secret-ish hook detail" not in job.model_dump_json()
    assert "secret-ish hook detail" not in store.inspect(job_id).model_dump_json()
    logged = [r for r in caplog.records if r.getMessage() == "job failed"]
    assert [str(r.exc_info[1]) for r in logged if r.exc_info] == ["secret-ish hook detail"]


async def test_an_attempt_hook_that_calls_call_next_twice_is_refused_and_the_handler_runs_once(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="jobtable")
    runner = jobtable.Runner(store)
    ran: list[int] = []

    @runner.hooks.around_attempt
    async def twice(ctx: jobtable.JobContext[Any], call_next: CallNext) -> Any:
        await call_next()
        return await call_next()

    async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        ran.append(payload)
        return "done"

    job_id = runner.register("work", work).enqueue(1)
    assert await runner.run_next() == job_id
    assert ran == [1]
    assert runner.get(job_id).error == jobtable.MESSAGE_INTERNAL
    [logged] = [r for r in caplog.records if r.getMessage() == "job failed"]
    assert logged.exc_info is not None
    assert str(logged.exc_info[1]).startswith(
        f"attempt hook {__name__}.test_an_attempt_hook_that_calls_call_next_twice_is_refused"
    )
    assert "called call_next() a second time in one attempt" in str(logged.exc_info[1])


async def test_an_attempt_hook_that_forgets_to_return_is_named_in_the_log(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="jobtable")
    runner = jobtable.Runner(store)

    @runner.hooks.around_attempt
    async def forgetful(ctx: jobtable.JobContext[Any], call_next: CallNext) -> Any:
        await call_next()

    async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        return "done"

    job_id = runner.register("work", work).enqueue(1)
    assert await runner.run_next() == job_id
    assert runner.get(job_id).error == jobtable.MESSAGE_INTERNAL
    [logged] = [r for r in caplog.records if r.getMessage() == "job failed"]
    assert logged.exc_info is not None
    message = str(logged.exc_info[1])
    assert "forgetful returned None though call_next() returned a str" in message
    assert "`return await call_next()`" in message


async def test_an_attempt_hook_that_returns_no_context_manager_fails_the_attempt(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    runner.hooks.around_attempt(lambda ctx: 42)  # type: ignore[arg-type]

    async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        return "done"

    job_id = runner.register("work", work).enqueue(1)
    assert await runner.run_next() == job_id
    assert runner.get(job_id).error == jobtable.MESSAGE_INTERNAL


async def test_outcome_hooks_see_each_outcome_with_the_stored_message_only(
    store: jobtable.Store,
) -> None:
    runner = jobtable.Runner(store)
    sync_seen: list[tuple[str, str, str | None]] = []
    async_seen: list[str] = []

    @runner.hooks.on_outcome
    def record(outcome: jobtable.AttemptOutcome) -> None:
        sync_seen.append((outcome.outcome, str(outcome.attempt), outcome.error))

    @runner.hooks.on_outcome
    async def arecord(outcome: jobtable.AttemptOutcome) -> None:
        async_seen.append(outcome.outcome)

    async def work(ctx: jobtable.JobContext[str], payload: str) -> str:
        if payload == "fail":
            raise jobtable.Failure("bad input")
        if payload == "crash":
            raise RuntimeError("exception text that is never stored")
        return "ok"

    kind = runner.register("work", work)
    for payload in ("ok", "fail"):
        kind.enqueue(payload)
    kind.enqueue("crash", max_attempts=2)
    for _ in range(3):
        assert await runner.run_next() is not None
    assert sync_seen == [
        ("succeeded", "1", None),
        ("failed", "1", "bad input"),
        ("retried", "1", jobtable.MESSAGE_INTERNAL),
    ]
    assert async_seen == ["succeeded", "failed", "retried"]


def test_an_attempt_outcome_names_a_cancel_and_an_interruption() -> None:
    job = ClaimedJob("j1", "work", 2)
    assert AttemptOutcome.of(job, Finish.cancelled(job)).outcome == "cancelled"  # type: ignore[arg-type]
    assert AttemptOutcome.of(job, None) == AttemptOutcome("j1", "work", 2, "interrupted", None)  # type: ignore[arg-type]
    retry = Finish.failed(job, "boom", "2030-01-01T00:00:00Z")  # type: ignore[arg-type]
    assert AttemptOutcome.of(job, retry).outcome == "retried"  # type: ignore[arg-type]


async def test_an_outcome_hook_that_raises_is_logged_and_changes_nothing(
    store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="jobtable")
    runner = jobtable.Runner(store)
    later: list[str] = []

    @runner.hooks.on_outcome
    def broken(outcome: jobtable.AttemptOutcome) -> None:
        raise RuntimeError("hook broke")

    runner.hooks.on_outcome(lambda outcome: later.append(outcome.outcome))

    async def work(ctx: jobtable.JobContext[str], payload: int) -> str:
        return "done"

    job_id = runner.register("work", work).enqueue(1)
    assert await runner.run_next() == job_id
    assert runner.get(job_id).status is jobtable.Status.SUCCEEDED
    assert later == ["succeeded"]
    assert [r.getMessage() for r in caplog.records] == ["outcome hook failed"]


def test_a_hook_that_is_not_callable_is_refused(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(TypeError, match="around_attempt: 42 is not callable"):
        runner.hooks.around_attempt(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_outcome: 42 is not callable"):
        runner.hooks.on_outcome(42)  # type: ignore[arg-type]
