"""Workflows on both engines: order, fan-in, failure, opt-in, payload from result, bad input."""

import pathlib
import sqlite3
from collections.abc import Iterator

import pydantic
import pytest

import jobtable
from jobtable.testing import drain

Status = jobtable.Status


class Fetched(pydantic.BaseModel):
    url: str
    size: int


fetch = jobtable.Kind("fetch", str, Fetched)
parse = jobtable.Kind("parse", Fetched, int)
total = jobtable.Kind("total", str, int)
notify = jobtable.Kind("notify", str, str)
boom = jobtable.Kind("boom", str, str)


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def runner_of(store: jobtable.Store, order: list[str]) -> jobtable.Runner:
    """A runner whose handlers record the order they ran in."""
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(fetch)
    def do_fetch(ctx: jobtable.JobContext[Fetched], url: str) -> Fetched:
        order.append(f"fetch {url}")
        return Fetched(url=url, size=len(url))

    @runner.handler(parse)
    def do_parse(ctx: jobtable.JobContext[int], page: Fetched) -> int:
        order.append(f"parse {page.url}")
        return page.size * 10

    @runner.handler(total)
    async def do_total(ctx: jobtable.JobContext[int], label: str) -> int:
        order.append(f"total {label}")
        return sum(page.size for page in await ctx.aresults(fetch))

    @runner.handler(notify)
    def do_notify(ctx: jobtable.JobContext[str], note: str) -> str:
        order.append(f"notify {note}")
        return ",".join(f"{d.kind}:{d.status}" for d in ctx.dependencies())

    @runner.handler(boom)
    def do_boom(ctx: jobtable.JobContext[str], why: str) -> str:
        order.append(f"boom {why}")
        raise jobtable.Failure(why)

    return runner


async def test_a_dependent_waits_pending_and_runs_only_after_its_dependency_succeeded(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    wf = jobtable.Workflow("ingest")
    a = wf.add(fetch, "https://a")
    # Lower priority runs first: without its dependency, b would run before a.
    b = wf.add(notify, "done", after=[a], priority=-1)
    wf.enqueue(store)
    assert store.get(b.id).status is Status.PENDING
    assert store.get(a.id).status is Status.QUEUED
    records = await drain(runner_of(store, order))
    assert order == ["fetch https://a", "notify done"]
    assert [r.status for r in records] == [Status.SUCCEEDED, Status.SUCCEEDED]
    assert store.get(b.id).result == "fetch:succeeded"


async def test_a_dependency_s_result_becomes_its_dependent_s_payload(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("ingest")
    a = wf.add(fetch, "https://abc")
    b = wf.add(parse, a)
    wf.enqueue(store)
    await drain(runner_of(store, []))
    assert parse.get(store, b.id).result == 110


async def test_fan_in_runs_once_after_every_dependency_and_reads_their_results(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    wf = jobtable.Workflow("fan")
    pages = [wf.add(fetch, f"u{i}") for i in range(5)]
    end = wf.add(total, "all", after=pages)
    wf.enqueue(store)
    await drain(runner_of(store, order))
    assert order[-1] == "total all"
    assert order.count("total all") == 1
    assert total.get(store, end.id).result == sum(len(f"u{i}") for i in range(5))


async def test_a_failed_dependency_cancels_its_dependents_transitively_with_a_reason(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    wf = jobtable.Workflow("doomed")
    a = wf.add(boom, "no")
    b = wf.add(notify, "b", after=[a])
    c = wf.add(notify, "c", after=[b])
    wf.enqueue(store)
    await drain(runner_of(store, order))
    assert order == ["boom no"]
    assert store.get(b.id).status is Status.CANCELLED
    assert store.get(c.id).status is Status.CANCELLED
    record = store.inspect(b.id)
    assert record.workflow_name == "doomed"
    assert record.cancelled_because == f"dependency {a.id} failed"
    assert store.inspect(c.id).cancelled_because == f"dependency {b.id} cancelled"


async def test_a_dependent_that_opted_in_runs_after_a_failure(store: jobtable.Store) -> None:
    order: list[str] = []
    wf = jobtable.Workflow("cleanup")
    a = wf.add(boom, "no")
    ok = wf.add(fetch, "x")
    end = wf.add(notify, "clean", after=[jobtable.After(a, on_failure="run"), ok])
    wf.enqueue(store)
    await drain(runner_of(store, order))
    assert order[-1] == "notify clean"
    assert store.get(end.id).result == "boom:failed,fetch:succeeded"


async def test_retrying_a_failed_dependency_lets_its_cancelled_dependents_run(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    wf = jobtable.Workflow("again")
    a = wf.add(boom, "no")
    b = wf.add(notify, "b", after=[a])
    c = wf.add(notify, "c", after=[b])
    wf.enqueue(store)
    runner = runner_of(store, order)
    await drain(runner)
    store.retry(a.id)
    assert store.get(b.id).status is Status.PENDING
    assert store.get(c.id).status is Status.PENDING
    await drain(runner)
    assert store.get(c.id).status is Status.CANCELLED
    assert store.inspect(c.id).cancelled_because == f"dependency {b.id} cancelled"


async def test_cancel_workflow_cancels_every_unfinished_job(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("stop")
    a = wf.add(fetch, "x")
    b = wf.add(notify, "b", after=[a])
    workflow_id = wf.enqueue(store)
    assert store.cancel_workflow(workflow_id) == 2
    assert {store.get(a.id).status, store.get(b.id).status} == {Status.CANCELLED}
    assert await drain(runner_of(store, [])) == []


async def test_a_retried_clean_up_runs_after_its_workflow_was_cancelled(
    store: jobtable.Store,
) -> None:
    # The clean-up opted in to its dependency's failure: once the workflow's
    # cancel ended that dependency, a retry of the clean-up runs it at once.
    wf = jobtable.Workflow("stop")
    a = wf.add(fetch, "x")
    end = wf.add(notify, "clean", after=[jobtable.After(a, on_failure="run")])
    store.cancel_workflow(wf.enqueue(store))
    assert store.retry(end.id) is jobtable.RetryResult.RETRIED
    assert store.get(end.id).status is Status.QUEUED
    await drain(runner_of(store, []))
    assert store.get(end.id).status is Status.SUCCEEDED


def test_a_retried_clean_up_waits_again_for_a_dependency_retried_before_it(
    store: jobtable.Store,
) -> None:
    # The cancel counted as the dependency's end; an operator then retried the
    # dependency, and the clean-up after it: the clean-up waits for its new end.
    wf = jobtable.Workflow("again")
    a = wf.add(fetch, "x")
    end = wf.add(notify, "clean", after=[jobtable.After(a, on_failure="run")])
    store.cancel_workflow(wf.enqueue(store))
    assert store.retry(a.id) is jobtable.RetryResult.RETRIED
    assert store.retry(end.id) is jobtable.RetryResult.RETRIED
    assert store.get(end.id).status is Status.PENDING
    store.cancel(a.id)
    assert store.get(end.id).status is Status.QUEUED
    # The other order: the clean-up first, then its dependency.
    wf2 = jobtable.Workflow("again-2")
    a2 = wf2.add(fetch, "x")
    end2 = wf2.add(notify, "clean", after=[jobtable.After(a2, on_failure="run")])
    store.cancel_workflow(wf2.enqueue(store))
    assert store.retry(end2.id) is jobtable.RetryResult.RETRIED
    assert store.get(end2.id).status is Status.QUEUED
    assert store.retry(a2.id) is jobtable.RetryResult.RETRIED
    assert store.get(end2.id).status is Status.PENDING


async def test_cancelling_a_queued_dependency_cancels_its_dependents(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("one")
    a = wf.add(fetch, "x")
    b = wf.add(notify, "b", after=[a])
    wf.enqueue(store)
    store.cancel(a.id)
    assert store.get(b.id).status is Status.CANCELLED


def test_a_node_of_another_workflow_is_refused(store: jobtable.Store) -> None:
    other = jobtable.Workflow("other")
    a = other.add(fetch, "x")
    wf = jobtable.Workflow("mine")
    with pytest.raises(ValueError, match="belongs to another workflow"):
        wf.add(notify, "b", after=[a])


def test_a_payload_of_the_wrong_type_stores_nothing(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("bad")
    a = wf.add(fetch, "x")
    wf.add(notify, 3, after=[a])  # type: ignore[misc]
    with pytest.raises(jobtable.PayloadError):
        wf.enqueue(store)
    with pytest.raises(jobtable.JobNotFound):
        store.get(a.id)


def test_a_dependency_that_is_no_node_is_refused(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("bad")
    with pytest.raises(TypeError, match="Node or After"):
        wf.add(notify, "b", after=["some-id"])  # type: ignore[list-item]


async def test_retrying_failed_jobs_in_bulk_lets_their_cancelled_dependents_run(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("bulk-again")
    a = wf.add(boom, "no")
    b = wf.add(notify, "b", after=[a])
    c = wf.add(notify, "c", after=[b])
    wf.enqueue(store)
    await drain(runner_of(store, []))
    assert store.retry_failed(kind="boom") == 1
    assert {store.get(b.id).status, store.get(c.id).status} == {Status.PENDING}


def test_a_workflow_joins_the_application_s_transaction_and_rolls_back_with_it(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "app.db"
    with jobtable.Store.open(path) as store:
        kept = jobtable.Workflow("kept")
        a = kept.add(fetch, "x")
        b = kept.add(notify, "b", after=[a])
        conn = sqlite3.connect(path)
        with conn:
            kept.enqueue(store, conn=conn)
        assert store.get(b.id).status is Status.PENDING
        dropped = jobtable.Workflow("dropped")
        c = dropped.add(fetch, "y")
        dropped.enqueue(store, conn=conn)
        conn.rollback()  # the application's transaction fails
        conn.close()
        with pytest.raises(jobtable.JobNotFound):
            store.get(c.id)
