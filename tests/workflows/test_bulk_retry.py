"""A bulk retry (``store.retry_failed``) settles each retried job of a workflow as one retry does.

On both engines: the jobs that counted a retried job's end wait for its new
end, a retried clean-up waits again for its retried dependencies, and the
jobs a failure cancelled run again, in dependency order.
"""

from collections.abc import Iterator

import pytest

import jobtable
from jobtable.testing import drain

Status = jobtable.Status
step = jobtable.Kind("step", str, str)
clean = jobtable.Kind("clean", str, str)
RUN = jobtable.After


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def runner_of(store: jobtable.Store, order: list[str], failing: set[str]) -> jobtable.Runner:
    """A runner whose handlers record the order they ran in, and fail for the names in failing."""
    runner = jobtable.Runner(store, workers=1)

    def run(name: str) -> str:
        order.append(name)
        if name in failing:
            raise jobtable.Failure(f"{name} failed")
        return name

    @runner.handler(step)
    def do_step(ctx: jobtable.JobContext[str], name: str) -> str:
        return run(name)

    @runner.handler(clean)
    def do_clean(ctx: jobtable.JobContext[str], name: str) -> str:
        return run(name)

    return runner


async def test_a_chain_runs_its_retried_job_then_the_dependent_its_failure_cancelled(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    failing = {"b"}
    wf = jobtable.Workflow("chain")
    a = wf.add(step, "a")
    b = wf.add(step, "b", after=[a])
    c = wf.add(step, "c", after=[b], priority=-1)
    wf.enqueue(store)
    await drain(runner_of(store, order, failing))
    assert [store.get(j.id).status for j in (a, b, c)] == [
        Status.SUCCEEDED,
        Status.FAILED,
        Status.CANCELLED,
    ]
    failing.clear()
    order.clear()
    assert store.retry_failed() == 1
    assert store.get(c.id).status is Status.PENDING
    await drain(runner_of(store, order, failing))
    assert order == ["b", "c"]


async def test_a_clean_up_that_ran_waits_again_for_its_retried_dependency(
    store: jobtable.Store,
) -> None:
    # The clean-up ran after a's failure and failed too; both are retried at
    # once: it must not run before a's new end, though it goes first by priority.
    order: list[str] = []
    failing = {"a", "clean"}
    wf = jobtable.Workflow("clean-up")
    a = wf.add(step, "a")
    end = wf.add(clean, "clean", after=[RUN(a, on_failure="run")], priority=-1)
    wf.enqueue(store)
    await drain(runner_of(store, order, failing))
    assert order == ["a", "clean"]
    failing.clear()
    order.clear()
    assert store.retry_failed() == 2
    assert store.get(end.id).status is Status.PENDING
    await drain(runner_of(store, order, failing))
    assert order == ["a", "clean"]
    assert store.get(end.id).status is Status.SUCCEEDED


async def test_a_clean_up_that_counted_the_end_and_has_not_started_waits_for_the_new_end(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    wf = jobtable.Workflow("not-started")
    a = wf.add(step, "a")
    end = wf.add(clean, "clean", after=[RUN(a, on_failure="run")])
    wf.enqueue(store)
    runner = runner_of(store, order, {"a"})
    await runner.run_next()  # a fails: the clean-up counted it and is queued
    assert store.get(end.id).status is Status.QUEUED
    assert store.retry_failed() == 1
    assert store.get(end.id).status is Status.PENDING
    await drain(runner_of(store, order, set()))
    assert order == ["a", "a", "clean"]


async def test_a_fan_in_clean_up_waits_for_every_retried_dependency(
    store: jobtable.Store,
) -> None:
    order: list[str] = []
    failing = {"a", "b", "join"}
    wf = jobtable.Workflow("fan-in")
    a = wf.add(step, "a")
    b = wf.add(step, "b")
    join = wf.add(
        clean, "join", after=[RUN(a, on_failure="run"), RUN(b, on_failure="run")], priority=-1
    )
    after_join = wf.add(step, "after", after=[join], priority=-2)
    wf.enqueue(store)
    await drain(runner_of(store, order, failing))
    assert store.get(after_join.id).status is Status.CANCELLED
    failing.clear()
    order.clear()
    assert store.retry_failed() == 3
    assert store.get(join.id).status is Status.PENDING
    assert store.get(after_join.id).status is Status.PENDING
    await drain(runner_of(store, order, failing))
    assert order == ["a", "b", "join", "after"]


async def test_a_bulk_retry_of_some_kinds_leaves_a_dependent_cancelled_by_a_job_still_failed(
    store: jobtable.Store,
) -> None:
    # c needs a and b; both failed. Retrying only a's kind revives c, which
    # b still blocks: c is cancelled again, naming b, not left pending.
    wf = jobtable.Workflow("partial")
    a = wf.add(step, "a")
    b = wf.add(clean, "b")
    c = wf.add(step, "c", after=[a, b])
    wf.enqueue(store)
    await drain(runner_of(store, [], {"a", "b"}))
    assert store.retry_failed(kind="step") == 1
    assert store.get(c.id).status is Status.CANCELLED
    assert store.inspect(c.id).cancelled_because == f"dependency {b.id} failed"


async def test_a_bulk_retry_leaves_every_job_as_single_retries_in_enqueue_order_would(
    store: jobtable.Store,
) -> None:
    # Two copies of one workflow end alike; one is retried in bulk, the other
    # job by job: every job of both is then in the same status.
    copies = []
    for name in ("bulk", "single"):
        wf = jobtable.Workflow(name)
        a = wf.add(step, "a")
        b = wf.add(clean, "b", after=[RUN(a, on_failure="run")])
        c = wf.add(step, "c", after=[a, b])
        d = wf.add(clean, "d", after=[RUN(c, on_failure="run"), b])
        e = wf.add(step, "e", after=[d])
        wf.enqueue(store)
        copies.append([a, b, c, d, e])
    await drain(runner_of(store, [], {"a", "b"}))
    bulk, single = copies
    failed = [n for n, job in enumerate(single) if store.get(job.id).status is Status.FAILED]
    assert failed
    for n in failed:
        assert store.retry(single[n].id) is jobtable.RetryResult.RETRIED
    assert store.retry_failed() == len(failed)
    assert [store.get(j.id).status for j in bulk] == [store.get(j.id).status for j in single]
    order: list[str] = []
    await drain(runner_of(store, order, set()))
    assert [store.get(j.id).status for j in bulk] == [Status.SUCCEEDED] * 5
    assert [store.get(j.id).status for j in single] == [Status.SUCCEEDED] * 5


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "single"])
async def test_a_clean_up_waits_again_for_a_dependent_revived_by_the_retry(
    store: jobtable.Store, bulk: bool
) -> None:
    # a's failure cancelled b, and the clean-up counted both ends and was
    # queued; retrying a revives b, whose new end the clean-up waits for too.
    order: list[str] = []
    wf = jobtable.Workflow("revived")
    a = wf.add(step, "a")
    b = wf.add(step, "b", after=[a])
    end = wf.add(
        clean, "clean", after=[RUN(a, on_failure="run"), RUN(b, on_failure="run")], priority=-1
    )
    wf.enqueue(store)
    await runner_of(store, order, {"a"}).run_next()
    assert store.get(b.id).status is Status.CANCELLED
    assert store.get(end.id).status is Status.QUEUED
    if bulk:
        assert store.retry_failed() == 1
    else:
        assert store.retry(a.id) is jobtable.RetryResult.RETRIED
    assert store.get(end.id).status is Status.PENDING
    await drain(runner_of(store, order, set()))
    assert order == ["a", "a", "b", "clean"]
