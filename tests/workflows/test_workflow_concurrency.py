"""A workflow's concurrency limit: at most N workflows of a name unfinished, oldest first."""

import asyncio
import threading
from collections.abc import Awaitable, Callable

import pytest
from settled import assert_settled

import jobtable
from jobtable.testing import drain, drain_sync

Status = jobtable.Status
WaitUntil = Callable[..., Awaitable[None]]

step = jobtable.Kind("slot_step", str, str)
other = jobtable.Kind("slot_other", str, str)


def workflow(label: str, limit: int | None = 1, name: str = "report") -> jobtable.Workflow:
    """A workflow of two independent jobs and a third after both, payloads named after label."""
    wf = jobtable.Workflow(name, concurrency=limit)
    a = wf.add(step, f"{label}1")
    b = wf.add(step, f"{label}2")
    wf.add(step, f"{label}3", after=[a, b])
    return wf


def job_ids(store: jobtable.Store, wf: jobtable.Workflow) -> list[str]:
    return [node.id for node in wf.nodes]


def statuses(store: jobtable.Store, wf: jobtable.Workflow) -> list[Status]:
    return [store.inspect(job_id).status for job_id in job_ids(store, wf)]


def recording_runner(store: jobtable.Store, seen: list[str], workers: int = 1) -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=workers, lease=5)

    @runner.handler(step)
    async def do_step(ctx: jobtable.JobContext[str], text: str) -> str:
        seen.append(text)
        return text

    return runner


async def test_limit_one_runs_the_workflows_one_after_another_oldest_first(
    store: jobtable.Store, store_target: str
) -> None:
    flows = [workflow(label) for label in "abc"]
    for wf in flows:
        wf.enqueue(store)
    # Only the first holds the slot: the others' jobs wait, pending, none claimable.
    assert statuses(store, flows[0]) == [Status.QUEUED, Status.QUEUED, Status.PENDING]
    assert statuses(store, flows[1]) == [Status.PENDING] * 3
    assert statuses(store, flows[2]) == [Status.PENDING] * 3
    assert_settled(store_target)
    seen: list[str] = []
    await drain(recording_runner(store, seen))
    assert [text[0] for text in seen] == list("aaabbbccc")
    assert all(s == [Status.SUCCEEDED] * 3 for s in map(lambda wf: statuses(store, wf), flows))
    assert_settled(store_target)


async def test_limit_two_holds_two_workflows_at_once(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    flows = [workflow(label, limit=2) for label in "abcde"]
    for wf in flows:
        wf.enqueue(store)
    assert [statuses(store, wf)[0] for wf in flows] == [Status.QUEUED] * 2 + [Status.PENDING] * 3
    runner = jobtable.Runner(store, workers=4, lease=5)
    active: dict[str, int] = {}
    widest: list[int] = [0]
    order: list[str] = []

    @runner.handler(step)
    async def do_step(ctx: jobtable.JobContext[str], text: str) -> str:
        label = text[0]
        if label not in active:
            order.append(label)
        active[label] = active.get(label, 0) + 1
        # A workflow is unfinished until its last job ended: count the ones begun, not ended.
        widest[0] = max(widest[0], len([k for k, n in active.items() if n < 3]))
        await asyncio.sleep(0.02)
        return text

    await runner.start()
    try:
        await wait_until(lambda: all(statuses(store, wf)[2] == Status.SUCCEEDED for wf in flows))
    finally:
        runner.stop()
        await runner.wait()
    assert widest[0] == 2
    assert order == list("abcde")


async def test_workflows_of_other_names_and_without_a_limit_are_not_held(
    store: jobtable.Store,
) -> None:
    workflow("a").enqueue(store)
    held = workflow("b")
    held.enqueue(store)
    free = workflow("c", limit=None)
    free.enqueue(store)
    own = workflow("d", name="other")
    own.enqueue(store)
    assert statuses(store, held)[0] == Status.PENDING
    assert statuses(store, free)[0] == Status.QUEUED
    assert statuses(store, own)[0] == Status.QUEUED


def test_a_cancel_of_the_running_workflow_admits_the_next(
    store: jobtable.Store, store_target: str
) -> None:
    first, second, third = (workflow(label) for label in "abc")
    for wf in (first, second, third):
        wf.enqueue(store)
    assert store.cancel_workflow(first.id) == 3
    # Admitted in the cancel's transaction: no runner had to act.
    assert statuses(store, second) == [Status.QUEUED, Status.QUEUED, Status.PENDING]
    assert statuses(store, third) == [Status.PENDING] * 3
    assert_settled(store_target)


def test_a_cancel_of_a_waiting_workflow_gives_up_its_place(
    store: jobtable.Store, store_target: str
) -> None:
    first, second, third = (workflow(label) for label in "abc")
    for wf in (first, second, third):
        wf.enqueue(store)
    store.cancel_workflow(second.id)
    assert statuses(store, second) == [Status.CANCELLED] * 3
    assert statuses(store, third) == [Status.PENDING] * 3
    assert_settled(store_target)
    store.cancel_workflow(first.id)
    assert statuses(store, third) == [Status.QUEUED, Status.QUEUED, Status.PENDING]
    assert_settled(store_target)


async def test_a_retry_runs_at_once_and_holds_the_slot_again(
    store: jobtable.Store, store_target: str
) -> None:
    first, second = workflow("a"), workflow("b")
    first.enqueue(store)
    second.enqueue(store)
    store.cancel_workflow(first.id)
    assert statuses(store, second)[0] == Status.QUEUED
    # An operator's retry of a job of the ended workflow runs without waiting.
    assert store.retry(job_ids(store, first)[0]) == jobtable.RetryResult.RETRIED
    assert statuses(store, first)[0] == Status.QUEUED
    assert_settled(store_target)
    # Both hold a slot now, so a third waits until both ended.
    third = workflow("c")
    third.enqueue(store)
    seen: list[str] = []
    await drain(recording_runner(store, seen))
    assert seen.index("c1") > max(seen.index("a1"), seen.index("b3"))
    assert_settled(store_target)


def test_a_retry_in_a_waiting_workflow_waits_for_its_slot(
    store: jobtable.Store, store_target: str
) -> None:
    first, second = workflow("a"), workflow("b")
    first.enqueue(store)
    second.enqueue(store)
    job = job_ids(store, second)[0]
    assert store.cancel(job) == jobtable.CancelResult.CANCELLED
    assert store.retry(job) == jobtable.RetryResult.RETRIED
    assert store.inspect(job).status == Status.PENDING
    assert_settled(store_target)
    store.cancel_workflow(first.id)
    assert statuses(store, second)[0] == Status.QUEUED
    assert_settled(store_target)


def test_deleting_the_running_workflows_jobs_admits_the_next(
    store: jobtable.Store, store_target: str
) -> None:
    first, second = workflow("a"), workflow("b")
    first.enqueue(store)
    second.enqueue(store)
    for job in reversed(job_ids(store, first)):
        assert store.delete(job) == jobtable.DeleteResult.DELETED
    assert statuses(store, second)[:2] == [Status.QUEUED, Status.QUEUED]
    assert_settled(store_target)


async def test_a_reopened_store_keeps_the_limit(store_target: str) -> None:
    with jobtable.Store.open(store_target) as store:
        first, second = workflow("a"), workflow("b")
        first.enqueue(store)
        second.enqueue(store)
    with jobtable.Store.open(store_target) as store:
        assert statuses(store, second) == [Status.PENDING] * 3
        seen: list[str] = []
        await drain(recording_runner(store, seen))
        assert [text[0] for text in seen] == list("aaabbb")


async def test_a_failed_workflow_frees_its_slot(store: jobtable.Store) -> None:
    first = jobtable.Workflow("report", concurrency=1)
    first.add(other, "x", max_attempts=1)
    first.enqueue(store)
    second = workflow("b")
    second.enqueue(store)
    runner = jobtable.Runner(store, workers=1, lease=5)

    @runner.handler(other)
    async def fail(ctx: jobtable.JobContext[str], text: str) -> str:
        raise RuntimeError("no")

    seen: list[str] = []

    @runner.handler(step)
    async def do_step(ctx: jobtable.JobContext[str], text: str) -> str:
        seen.append(text)
        return text

    await drain(runner)
    assert store.inspect(first.nodes[0].id).status == Status.FAILED
    assert sorted(seen) == ["b1", "b2", "b3"]


@pytest.mark.parametrize("limit", [0, -1, 2**31])
def test_a_limit_out_of_range_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match=f"concurrency must be from 1 .* got {limit}"):
        jobtable.Workflow("report", concurrency=limit)


@pytest.mark.parametrize("limit", [True, 1.0, "2"])
def test_a_limit_that_is_no_int_is_refused(limit: object) -> None:
    with pytest.raises(TypeError, match="concurrency must be an int or None"):
        jobtable.Workflow("report", concurrency=limit)  # type: ignore[arg-type]


def test_a_sub_workflow_with_a_limit_is_refused(store: jobtable.Store) -> None:
    outer = jobtable.Workflow("outer")
    outer.add(other, "x")
    outer.enqueue(store)
    runner = jobtable.Runner(store, workers=1)
    refused: list[str] = []

    @runner.handler(other)
    def add_sub(ctx: jobtable.JobContext[str], text: str) -> str:
        sub = jobtable.Workflow("sub", concurrency=1)
        sub.add(step, "y")
        try:
            ctx.add_workflow(sub)
        except ValueError as error:
            refused.append(str(error))
        return text

    drain_sync(runner)
    assert len(refused) == 1
    assert "no concurrency limit" in refused[0]


def held_and_waiting(store: jobtable.Store, flows: list[jobtable.Workflow]) -> tuple[int, int]:
    """How many of flows hold a slot (admitted, unfinished) and how many wait for one."""
    graphs = [store.workflow(wf.id) for wf in flows]
    unfinished = [g for g in graphs if any(j.status in UNENDED for j in g.jobs)]
    return len([g for g in unfinished if not g.waiting]), len([g for g in graphs if g.waiting])


UNENDED = (Status.PENDING, Status.QUEUED, Status.RUNNING)


def test_concurrent_enqueues_and_cancels_keep_the_limit(store_target: str) -> None:
    flows = [workflow(str(n), limit=2) for n in range(12)]

    def enqueue(part: list[jobtable.Workflow]) -> None:
        with jobtable.Store.open(store_target) as own:
            for wf in part:
                wf.enqueue(own)

    threads = [threading.Thread(target=enqueue, args=(flows[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with jobtable.Store.open(store_target) as store:
        assert held_and_waiting(store, flows) == (2, 10)
        held = [wf for wf in flows if not store.workflow(wf.id).waiting]

    def cancel(wf: jobtable.Workflow) -> None:
        with jobtable.Store.open(store_target) as own:
            own.cancel_workflow(wf.id)

    # Each cancel frees a slot in its own transaction, at once: two are admitted.
    threads = [threading.Thread(target=cancel, args=(wf,)) for wf in held]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with jobtable.Store.open(store_target) as store:
        assert held_and_waiting(store, flows) == (2, 8)
        assert_settled(store_target)


@pytest.mark.postgres
def test_an_enqueue_counts_the_slot_an_uncommitted_enqueue_took(pg_url: str) -> None:
    # Under READ COMMITTED, a second enqueue that counted the held slots
    # before the first committed would take a slot too: it waits for the
    # first's lock, then counts it.
    import psycopg

    first, second = workflow("a"), workflow("b")
    with jobtable.Store.open(pg_url) as store, psycopg.connect(pg_url) as conn:
        first.enqueue(store, conn=conn)  # its transaction stays open
        enqueuing = threading.Thread(target=second.enqueue, args=(store,), daemon=True)
        enqueuing.start()
        enqueuing.join(0.5)
        assert enqueuing.is_alive(), "the second enqueue did not wait for the first's"
        conn.commit()
        enqueuing.join(30)
        assert statuses(store, first)[0] == Status.QUEUED
        assert store.workflow(second.id).waiting
        assert statuses(store, second) == [Status.PENDING] * 3
