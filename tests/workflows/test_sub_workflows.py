"""A handler adds a whole workflow in one call; its result reaches the running job's dependents."""

from collections.abc import Callable, Iterator

import pytest

import jobtable
from jobtable.testing import drain

Status = jobtable.Status

order = jobtable.Kind("order", int, str)
fetch = jobtable.Kind("fetch", int, int)
render = jobtable.Kind("render", int, str)
notify = jobtable.Kind("notify", str, str)
audit = jobtable.Kind("audit", str, str)


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def runner_of(store: jobtable.Store, render_fails: bool = False) -> jobtable.Runner:
    """A runner whose order job hands its dependents over to a fetch-then-render sub-workflow."""
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(order)
    def do_order(ctx: jobtable.JobContext[str], n: int) -> str:
        sub = jobtable.Workflow("render")
        fetched = sub.add(fetch, n)
        rendered = sub.add(render, fetched)
        ctx.add_workflow(sub, result=rendered)
        ctx.workflow.add(audit, rendered)  # a sub-workflow's node feeds a later job too
        return "order placed"

    @runner.handler(fetch)
    def do_fetch(ctx: jobtable.JobContext[int], n: int) -> int:
        return n * 10

    @runner.handler(render)
    def do_render(ctx: jobtable.JobContext[str], n: int) -> str:
        if render_fails:
            raise jobtable.Failure("render failed")
        return f"page {n}"

    @runner.handler(notify)
    def do_notify(ctx: jobtable.JobContext[str], text: str) -> str:
        return f"sent {text}"

    @runner.handler(audit)
    def do_audit(ctx: jobtable.JobContext[str], text: str) -> str:
        return f"audited {text}"

    return runner


async def test_a_sub_workflows_result_reaches_the_running_jobs_dependents(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("shop")
    placed = wf.add(order, 4)
    told = wf.add(notify, placed)  # fed the order's result: a str, as render's
    wf.enqueue(store)
    records = await drain(runner_of(store))
    kinds = [r.kind for r in records]
    assert kinds.index("notify") > kinds.index("render") > kinds.index("fetch")
    by_kind = {r.kind: r for r in records}
    assert by_kind["order"].result == "order placed"
    assert by_kind["notify"].result == "sent page 40"
    assert by_kind["audit"].result == "audited page 40"
    assert all(r.status == Status.SUCCEEDED for r in records)
    # The sub-workflow's jobs joined the running job's workflow.
    assert {store.inspect(r.id).workflow_id for r in records} == {wf.id}
    deps = {d.kind for d in store.inspect(told.id).workflow.dependencies}  # type: ignore[union-attr]
    assert deps == {"order", "render"}


async def test_a_failed_sub_workflow_cancels_the_handed_over_dependents(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("shop")
    told = wf.add(notify, wf.add(order, 4))
    wf.enqueue(store)
    records = await drain(runner_of(store, render_fails=True), retries=False)
    statuses = {r.kind: r.status for r in records}
    assert statuses["order"] == Status.SUCCEEDED
    assert statuses["render"] == Status.FAILED
    told_now = store.inspect(told.id)
    assert told_now.status == Status.CANCELLED
    [render_id] = [r.id for r in records if r.kind == "render"]
    assert told_now.cancelled_because == f"dependency {render_id} failed"


async def test_cancel_workflow_cancels_the_sub_workflows_jobs(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("shop")
    told = wf.add(notify, wf.add(order, 4))
    wf.enqueue(store)
    runner = runner_of(store)
    ran = await runner.run_next()
    assert ran is not None
    assert store.inspect(ran).kind == "order"
    store.cancel_workflow(wf.id)
    assert await drain(runner) == []
    unfinished = [j for j in store.list_jobs() if j.status != Status.SUCCEEDED]
    assert {j.kind for j in unfinished} == {"fetch", "render", "audit", "notify"}
    assert all(j.status == Status.CANCELLED for j in unfinished)
    assert store.inspect(told.id).status == Status.CANCELLED


def test_add_workflow_refuses_what_cannot_be_added(store: jobtable.Store) -> None:
    outcomes: list[str] = []
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(fetch)
    def do_fetch(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    @runner.handler(render)
    def do_render(ctx: jobtable.JobContext[str], n: int) -> str:
        return str(n)

    @runner.handler(order)
    def do_order(ctx: jobtable.JobContext[str], n: int) -> str:
        stored = jobtable.Workflow("stored")
        stored.add(fetch, 1)
        stored.enqueue(store)
        other = jobtable.Workflow("other")
        stranger = other.add(render, 1)
        sub = jobtable.Workflow("sub")
        numbers = sub.add(fetch, 1)
        attempts: list[Callable[[], None]] = [
            lambda: ctx.add_workflow(stored),
            lambda: ctx.add_workflow(jobtable.Workflow("empty")),
            lambda: ctx.add_workflow(sub, result=stranger),
            lambda: ctx.workflow.add_workflow(sub, result=numbers),  # returns int, not str
            lambda: ctx.workflow.add_workflow("sub"),  # type: ignore[arg-type]
        ]
        for attempt in attempts:
            try:
                attempt()
            except (TypeError, ValueError) as error:
                outcomes.append(type(error).__name__)
        ctx.add_workflow(sub)  # nothing above added any of sub's jobs
        first, second = jobtable.Workflow("first"), jobtable.Workflow("second")
        ctx.add_workflow(first, result=first.add(render, 1))
        try:
            ctx.add_workflow(second, result=second.add(render, 2))
        except ValueError as error:
            outcomes.append(f"twice: {error}")
        return "ok"

    wf = jobtable.Workflow("shop")
    wf.add(order, 1)
    wf.enqueue(store)
    records = jobtable.testing.drain_sync(runner, retries=False)
    assert outcomes[:5] == ["ValueError", "ValueError", "ValueError", "TypeError", "TypeError"]
    assert "give result= to one add_workflow only" in outcomes[5]
    ours = [r.kind for r in records if store.inspect(r.id).workflow_id == wf.id]
    assert ours == ["order", "fetch", "render"]


def test_a_workflows_priority_applies_to_jobs_that_give_none(store: jobtable.Store) -> None:
    urgent = jobtable.Kind("urgent", int, int, priority=7)
    wf = jobtable.Workflow("ranked", priority=-3)
    plain = wf.add(urgent, 1)
    own = wf.add(urgent, 2, priority=2)
    wf.enqueue(store)
    assert store.inspect(plain.id).priority == -3
    assert store.inspect(own.id).priority == 2
    with pytest.raises(TypeError, match="priority must be an int"):
        jobtable.Workflow("bad", priority="high")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="32 bits"):
        jobtable.Workflow("bad", priority=2**40)


async def test_a_sub_workflow_keeps_its_own_priority(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(order)
    def do_order(ctx: jobtable.JobContext[str], n: int) -> str:
        sub = jobtable.Workflow("render", priority=9)
        sub.add(fetch, n)
        ctx.add_workflow(sub)
        return "ok"

    @runner.handler(fetch)
    def do_fetch(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    wf = jobtable.Workflow("shop")
    wf.add(order, 1)
    wf.enqueue(store)
    records = await drain(runner)
    [fetched] = [r for r in records if r.kind == "fetch"]
    assert store.inspect(fetched.id).priority == 9
