"""An operator's retry and delete of a workflow's jobs settle the jobs around them, and say so.

On both engines, in their single and bulk forms: a retry answers RETRIED
only when the job left failed or cancelled, and is refused (BLOCKED, the
dependency named) while a dependency it needs failed, was cancelled or was
deleted; a delete settles the jobs that needed the deleted one, which stay
cancelled for good, naming it; pruning keeps a job that another still
needs. After every action, no job is pending with nothing left to wait for
(``settled.assert_settled``).
"""

import datetime
from collections.abc import Callable, Iterator

import pytest
from settled import assert_settled

import jobtable
from jobtable.testing import drain

Status = jobtable.Status
Retry = jobtable.RetryResult
step = jobtable.Kind("step", str, str)
other = jobtable.Kind("other", str, str)
RUN = jobtable.After


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def runner_of(store: jobtable.Store, failing: set[str]) -> jobtable.Runner:
    """A runner whose handlers fail, with a Failure, for the payloads in failing."""
    runner = jobtable.Runner(store, workers=1)

    def run(name: str) -> str:
        if name in failing:
            raise jobtable.Failure(f"{name} failed")
        return name

    runner.handler(step)(lambda ctx, name: run(name))
    runner.handler(other)(lambda ctx, name: run(name))
    return runner


def blocked_by(store: jobtable.Store, job_id: str) -> list[str]:
    return store.inspect(job_id).blocked_by


Delete = Callable[[jobtable.Store, str], None]


def delete_one(store: jobtable.Store, job_id: str) -> None:
    assert store.delete(job_id) is jobtable.DeleteResult.DELETED


def delete_many(store: jobtable.Store, job_id: str) -> None:
    assert store.delete_many([job_id]) == {job_id: jobtable.DeleteResult.DELETED}


def delete_matching(store: jobtable.Store, job_id: str) -> None:
    # Every job of the dependency's kind: the dependency alone is of kind step.
    assert store.delete_matching(kind="step") == 1


DELETES = pytest.mark.parametrize(
    "delete", [delete_one, delete_many, delete_matching], ids=["delete", "many", "matching"]
)


async def test_retrying_a_dependent_whose_dependency_failed_is_refused_naming_it(
    store: jobtable.Store, store_target: str
) -> None:
    failing = {"a"}
    wf = jobtable.Workflow("blocked")
    a = wf.add(step, "a")
    b = wf.add(other, "b", after=[a])
    wf.enqueue(store)
    await drain(runner_of(store, failing))
    assert store.retry(b.id) is Retry.BLOCKED
    assert store.get(b.id).status is Status.CANCELLED
    assert blocked_by(store, b.id) == [f"dependency {a.id} failed"]
    assert_settled(store_target)
    # The dependency's retry is what brings it back.
    failing.clear()
    assert store.retry(a.id) is Retry.RETRIED
    assert store.get(b.id).status is Status.PENDING
    assert blocked_by(store, b.id) == []
    assert_settled(store_target)
    await drain(runner_of(store, failing))
    assert store.get(b.id).status is Status.SUCCEEDED
    assert_settled(store_target)


async def test_retrying_a_job_an_operator_cancelled_is_refused_while_its_dependency_failed(
    store: jobtable.Store, store_target: str
) -> None:
    wf = jobtable.Workflow("cancelled-first")
    a = wf.add(step, "a")
    b = wf.add(other, "b", after=[a])
    wf.enqueue(store)
    assert store.cancel(b.id) is jobtable.CancelResult.CANCELLED
    await drain(runner_of(store, {"a"}))
    assert store.retry(b.id) is Retry.BLOCKED
    assert store.get(b.id).status is Status.CANCELLED
    assert blocked_by(store, b.id) == [f"dependency {a.id} failed"]
    assert_settled(store_target)


@DELETES
async def test_retrying_the_dependent_of_a_deleted_failed_dependency_is_refused_naming_it(
    store: jobtable.Store, store_target: str, delete: Delete
) -> None:
    wf = jobtable.Workflow("deleted-failed")
    a = wf.add(step, "a")
    b = wf.add(other, "b", after=[a])
    wf.enqueue(store)
    await drain(runner_of(store, {"a"}))
    delete(store, a.id)
    assert_settled(store_target)
    assert store.retry(b.id) is Retry.BLOCKED
    assert store.get(b.id).status is Status.CANCELLED
    assert blocked_by(store, b.id) == [f"dependency {a.id} deleted"]
    assert store.inspect(b.id).cancelled_because == f"dependency {a.id} deleted"
    assert_settled(store_target)


async def test_a_dependent_whose_other_dependency_succeeded_is_not_left_pending_by_a_retry(
    store: jobtable.Store, store_target: str
) -> None:
    # b needs a (failed, then deleted) and c (succeeded): a retry of b is
    # refused; it needed a to succeed, which no longer can.
    wf = jobtable.Workflow("two")
    a = wf.add(step, "a")
    c = wf.add(other, "c")
    b = wf.add(other, "b", after=[a, c])
    wf.enqueue(store)
    await drain(runner_of(store, {"a"}))
    assert store.get(c.id).status is Status.SUCCEEDED
    store.delete(a.id)
    assert store.retry(b.id) is Retry.BLOCKED
    assert store.get(b.id).status is Status.CANCELLED
    assert blocked_by(store, b.id) == [f"dependency {a.id} deleted"]
    assert_settled(store_target)


@DELETES
async def test_deleting_a_queued_dependency_cancels_its_dependents_for_good(
    store: jobtable.Store, store_target: str, delete: Delete
) -> None:
    wf = jobtable.Workflow("deleted-queued")
    a = wf.add(step, "a")
    b = wf.add(other, "b", after=[a])
    c = wf.add(other, "c", after=[b])
    wf.enqueue(store)
    delete(store, a.id)
    assert_settled(store_target)
    assert [store.get(j.id).status for j in (b, c)] == [Status.CANCELLED] * 2
    assert store.inspect(b.id).cancelled_because == f"dependency {a.id} deleted"
    assert store.retry(b.id) is Retry.BLOCKED
    assert store.retry(c.id) is Retry.BLOCKED
    assert blocked_by(store, c.id) == [f"dependency {b.id} cancelled"]
    assert await drain(runner_of(store, set())) == []
    assert_settled(store_target)


@DELETES
async def test_a_clean_up_after_a_deleted_dependency_runs(
    store: jobtable.Store, store_target: str, delete: Delete
) -> None:
    wf = jobtable.Workflow("clean-up")
    a = wf.add(step, "a")
    end = wf.add(other, "clean", after=[RUN(a, on_failure="run")])
    wf.enqueue(store)
    delete(store, a.id)
    assert store.get(end.id).status is Status.QUEUED
    assert_settled(store_target)
    await drain(runner_of(store, set()))
    assert store.get(end.id).status is Status.SUCCEEDED
    assert_settled(store_target)


async def test_deleting_a_dependency_that_succeeded_leaves_its_dependents_waiting_for_the_rest(
    store: jobtable.Store, store_target: str
) -> None:
    wf = jobtable.Workflow("succeeded")
    a = wf.add(step, "a")
    c = wf.add(other, "c", after=[a])
    b = wf.add(other, "b", after=[a, c])
    wf.enqueue(store)
    runner = runner_of(store, set())
    await runner.run_next()  # a succeeds; b still waits for c
    store.delete(a.id)
    assert store.get(b.id).status is Status.PENDING
    assert_settled(store_target)
    await drain(runner)
    assert store.get(b.id).status is Status.SUCCEEDED
    assert_settled(store_target)


async def test_a_bulk_delete_by_filter_takes_a_whole_failed_workflow(
    store: jobtable.Store, store_target: str
) -> None:
    wf = jobtable.Workflow("whole")
    a = wf.add(step, "a")
    wf.add(other, "b", after=[a])
    wf.add(other, "c", after=[a])
    wf.enqueue(store)
    await drain(runner_of(store, {"a"}))
    assert store.delete_matching() == 3
    assert store.list_jobs() == []
    assert_settled(store_target)


async def test_a_bulk_delete_by_filter_settles_the_dependents_of_a_pending_dependency(
    store: jobtable.Store, store_target: str
) -> None:
    wf = jobtable.Workflow("pending")
    a = wf.add(step, "a")
    b = wf.add(other, "b", after=[a])
    c = wf.add(step, "c", after=[b])
    d = wf.add(other, "d", after=[c])
    wf.enqueue(store)
    assert store.delete_matching(kind="step") == 2
    assert [store.get(j.id).status for j in (b, d)] == [Status.CANCELLED] * 2
    assert store.inspect(d.id).cancelled_because == f"dependency {c.id} deleted"
    assert_settled(store_target)


async def test_a_bulk_retry_of_selected_jobs_retries_only_the_unblocked(
    store: jobtable.Store, store_target: str
) -> None:
    # The dashboard's bulk retry of ticked jobs: each as a single retry.
    wf = jobtable.Workflow("selected")
    a = wf.add(step, "a")
    b = wf.add(other, "b", after=[a])
    wf.enqueue(store)
    await drain(runner_of(store, {"a"}))
    assert [store.retry(j.id) for j in (b, a)] == [Retry.BLOCKED, Retry.RETRIED]
    assert [store.get(j.id).status for j in (a, b)] == [Status.QUEUED, Status.PENDING]
    assert_settled(store_target)


async def test_prune_keeps_a_failed_dependency_until_the_dependent_it_cancelled_is_gone(
    store: jobtable.Store, store_target: str
) -> None:
    wf = jobtable.Workflow("pruned")
    a = wf.add(step, "a")
    wf.add(other, "b", after=[a])
    wf.enqueue(store)
    await drain(runner_of(store, {"a"}))
    assert store.prune(datetime.timedelta(0)) == 1
    assert [job.id for job in store.list_jobs()] == [a.id]
    assert_settled(store_target)
    assert store.prune(datetime.timedelta(0)) == 1
    assert store.list_jobs() == []
