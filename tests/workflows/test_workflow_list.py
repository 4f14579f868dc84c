"""Store.workflows on both engines: newest first, keyset pages, by name, counts and state."""

import datetime
import pathlib
import sqlite3
from collections.abc import Iterator

import pytest

import jobtable
from jobtable.db.sqlite import workflows as sqlite_workflows
from jobtable.testing import FrozenClock, drain

Status = jobtable.Status
step = jobtable.Kind("step", str, str)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def store(store_target: str, clock: FrozenClock) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target, clock=clock) as opened:
        yield opened


def chain(store: jobtable.Store, name: str, *steps: str) -> str:
    """Stores a workflow of name whose jobs run steps one after the other; returns its id."""
    wf = jobtable.Workflow(name)
    last = None
    for each in steps:
        last = wf.add(step, each, after=[] if last is None else [last])
    return wf.enqueue(store)


def runner_of(store: jobtable.Store) -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(step)
    def do_step(ctx: jobtable.JobContext[str], name: str) -> str:
        if name == "fail":
            raise jobtable.Failure("failed on purpose")
        return name

    return runner


def test_workflows_are_listed_newest_first_a_keyset_page_at_a_time(
    store: jobtable.Store, clock: FrozenClock
) -> None:
    ids = []
    for n in range(5):
        ids.append(chain(store, f"w{n % 2}", "a"))
        if n != 2:  # two stored at one instant: the id orders them
            clock.advance(seconds=1)
    listed = [w.id for w in store.workflows()]
    # ids[2] and ids[3] were stored at one instant: their ids order them.
    assert listed[:1] + listed[3:] == [ids[4], ids[1], ids[0]]
    assert set(listed[1:3]) == {ids[2], ids[3]}
    pages, before = [], None
    while page := store.workflows(before=before, limit=2):
        pages.append([w.id for w in page])
        before = page[-1].id
    assert [i for p in pages for i in p] == listed
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [w.id for w in store.workflows(name="w1")] == [ids[3], ids[1]]
    assert store.workflows(name="nothing") == []
    assert store.workflows(before="no-such-workflow") == []


async def test_each_workflow_has_its_jobs_counted_and_a_state(store: jobtable.Store) -> None:
    done = chain(store, "done", "a", "b")
    failed = chain(store, "failed", "a", "fail", "c")
    await drain(runner_of(store))
    running = chain(store, "running", "a", "b")
    cancelled = chain(store, "cancelled", "a")
    store.cancel_workflow(cancelled)
    emptied = chain(store, "emptied", "a")
    for job in store.workflow(emptied).jobs:
        store.delete(job.id)
    listed = {w.id: w for w in store.workflows()}
    assert {i: w.state for i, w in listed.items()} == {
        done: "finished",
        failed: "failed",
        running: "running",
        cancelled: "cancelled",
        emptied: "finished",
    }
    assert listed[failed].counts == {
        Status.QUEUED: 0,
        Status.PENDING: 0,
        Status.RUNNING: 0,
        Status.SUCCEEDED: 1,
        Status.FAILED: 1,
        Status.CANCELLED: 1,
    }
    assert listed[running].counts[Status.QUEUED] == 1
    assert listed[running].counts[Status.PENDING] == 1
    assert sum(listed[emptied].counts.values()) == 0
    assert listed[done].name == "done"
    assert listed[done].created_at.tzinfo is not None


async def test_pruning_takes_a_workflow_with_its_last_job_and_keeps_the_others(
    store: jobtable.Store, clock: FrozenClock
) -> None:
    done = chain(store, "done", "a", "b")
    await drain(runner_of(store))
    waiting = chain(store, "waiting", "a")
    clock.advance(days=2)
    # done's jobs finished 2 days ago: they go, and the workflow with them;
    # waiting is as old, but its job has not run.
    assert store.prune(datetime.timedelta(days=1)) == 2
    assert [w.name for w in store.workflows()] == ["waiting"]
    with pytest.raises(jobtable.JobNotFound, match=done):
        store.workflow(done)
    assert [job.status for job in store.workflow(waiting).jobs] == [Status.QUEUED]


def test_a_bad_argument_is_refused_by_name(store: jobtable.Store) -> None:
    with pytest.raises(ValueError, match="limit must be 1 to 1000, got 0"):
        store.workflows(limit=0)
    with pytest.raises(TypeError, match="limit is str"):
        store.workflows(limit="5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name is int"):
        store.workflows(name=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="before 'a\\\\x00b': it contains a NUL"):
        store.workflows(before="a\x00b")


async def test_the_async_form_lists_the_same(store: jobtable.Store) -> None:
    chain(store, "one", "a")
    assert await store.aworkflows() == store.workflows()


def sqlite_plan(tmp_path: pathlib.Path, query: str, params: tuple[object, ...]) -> list[str]:
    """The steps of query's plan on a new SQLite store."""
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    conn = sqlite3.connect(path)
    try:
        return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", params)]
    finally:
        conn.close()


def test_the_listing_reads_a_range_of_workflows_and_each_one_s_jobs(tmp_path: pathlib.Path) -> None:
    # A page after a cursor is one range of workflows_by_time, not a scan of
    # the newer workflows, and the jobs table is never scanned: only the
    # listed workflows' ranges of jobs_workflow are read.
    steps = sqlite_plan(tmp_path, sqlite_workflows.LIST_WORKFLOWS, (None, "some-id", 50))
    on_jobs = [s for s in steps if " jobs " in f"{s} "]
    assert on_jobs == ["SEARCH jobs USING INDEX jobs_workflow (workflow_id=?) LEFT-JOIN"]
    assert "SEARCH w USING INDEX workflows_by_time ((created_at,id)<(?,?))" in steps


def test_pruning_reads_a_range_of_old_workflows_and_each_one_s_first_job(
    tmp_path: pathlib.Path,
) -> None:
    steps = sqlite_plan(tmp_path, sqlite_workflows.DELETE_EMPTY_WORKFLOWS, ("2026-01-01", 1000))
    assert "SEARCH w USING COVERING INDEX workflows_by_time (created_at<?)" in steps
    assert "SEARCH jobs USING COVERING INDEX jobs_workflow (workflow_id=?)" in steps
    assert not [s for s in steps if s.startswith("SCAN")]
