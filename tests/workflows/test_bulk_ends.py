"""Writes that end jobs in bulk, knowing nothing of workflows, still settle their dependents."""

import contextlib
import sqlite3
from collections.abc import Iterator

import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._values import now

Status = jobtable.Status
step = jobtable.Kind("step", int, int)
other = jobtable.Kind("other", int, int)


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def claim_as(store: jobtable.Store, runner: str) -> list[str]:
    """Claims the queued jobs for a runner that is not running here: a crashed process."""

    def claim(q: Queries) -> list[str]:
        claimed = q.finish_and_claim_jobs(
            outcomes=[], queue="default", runner=runner, now=now(), max_jobs=10
        )[1]
        return [row.id for row in claimed]

    return store.engine.write(claim)


async def test_a_dependency_failed_by_a_restart_cancels_its_dependents(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("crash")
    a = wf.add(step, 1)
    b = wf.add(step, 2, after=[a])
    wf.enqueue(store)
    assert claim_as(store, "worker") == [a.id]
    runner = jobtable.Runner(store, name="worker")
    runner.handler(step)(lambda ctx, n: n)
    await runner.start()  # fails a, left running by the previous "worker", as interrupted
    runner.stop()
    await runner.wait()
    assert store.get(a.id).error == jobtable.MESSAGE_INTERRUPTED
    assert store.get(b.id).status is Status.CANCELLED
    assert store.inspect(b.id).cancelled_because == f"dependency {a.id} failed"


def test_a_bulk_cancel_of_dependencies_cancels_their_dependents(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("bulk")
    a = wf.add(step, 1)
    b = wf.add(other, 2, after=[a])
    wf.enqueue(store)
    assert store.cancel_matching(kind="step").cancelled == 1
    assert store.get(b.id).status is Status.CANCELLED
    assert store.inspect(b.id).cancelled_because == f"dependency {a.id} cancelled"


def test_a_bulk_cancel_cancels_pending_jobs_too(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("bulk")
    a = wf.add(step, 1)
    b = wf.add(other, 2, after=[a])
    c = wf.add(other, 3, after=[b])
    wf.enqueue(store)
    assert store.cancel_matching(kind="other").cancelled == 2
    assert store.get(a.id).status is Status.QUEUED
    assert {store.get(b.id).status, store.get(c.id).status} == {Status.CANCELLED}


def edges(store_target: str) -> int:
    """How many rows job_deps holds, read straight from the database."""
    if store_target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_target) as conn:
            row = conn.execute("SELECT count(*) FROM job_deps").fetchone()
    else:
        with contextlib.closing(sqlite3.connect(store_target)) as conn:
            row = conn.execute("SELECT count(*) FROM job_deps").fetchone()
    assert row is not None
    return int(row[0])


def test_a_deleted_job_of_a_workflow_takes_its_edges_with_it(
    store: jobtable.Store, store_target: str
) -> None:
    wf = jobtable.Workflow("gone")
    a = wf.add(step, 1)
    b = wf.add(other, 2, after=[a])
    c = wf.add(other, 3, after=[a])
    wf.enqueue(store)
    assert edges(store_target) == 2
    store.cancel_workflow(wf.id)
    store.delete(b.id)
    assert edges(store_target) == 1
    store.delete(a.id)
    assert edges(store_target) == 0
    assert store.get(c.id).status is Status.CANCELLED


def test_deleting_a_dependency_that_never_ran_cancels_its_dependents(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("deleted")
    a = wf.add(step, 1)
    b = wf.add(other, 2, after=[a])
    wf.enqueue(store)
    store.delete(a.id)
    assert store.get(b.id).status is Status.CANCELLED


def test_a_bulk_delete_settles_the_jobs_that_waited_for_a_deleted_job(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("bulk-delete")
    a = wf.add(step, 1)
    b = wf.add(other, 2, after=[a])
    wf.enqueue(store)
    plain = step.enqueue(store, 3)
    # a goes as a delete by id takes it: b, which waited for it, is cancelled naming it.
    assert store.delete_matching(kind="step") == 2
    assert store.list_jobs(kind="step") == []
    assert store.get(b.id).status is Status.CANCELLED
    assert store.inspect(b.id).cancelled_because == f"dependency {a.id} deleted"
    with pytest.raises(jobtable.JobNotFound):
        store.get(plain)
    assert store.delete_matching() == 1
