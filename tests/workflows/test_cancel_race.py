"""A cancel that races a running job's success: once it returned, no job of the workflow starts.

The job's handler blocks while the test cancels its workflow (or the job),
then returns success with jobs it added through ``ctx.workflow``: its
success is recorded, and the jobs it added are stored cancelled, never run.
"""

import asyncio
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._runner.run_operations import Finish, FinishAndClaim, finish_and_claim
from jobtable._workflow import FanOut
from jobtable.testing import drain

Status = jobtable.Status
WaitUntil = Callable[..., Awaitable[None]]

racer = jobtable.Kind("racer", int, int)
piece = jobtable.Kind("piece", int, int)
after = jobtable.Kind("after", str, str)


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def with_query(url: str, **params: str) -> str:
    """Returns url with params added to its query string."""
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), *params.items()]
    return urlunsplit(parts._replace(query=urlencode(query)))


class Race:
    """A racer handler that blocks until let go, then adds pieces and returns; what ran."""

    def __init__(self, add_before_cancel: bool) -> None:
        self.add_before_cancel = add_before_cancel
        self.started = threading.Event()
        self.go = threading.Event()
        self.added: list[str] = []
        self.ran: list[str] = []

    def handle(self, ctx: jobtable.JobContext[int], n: int) -> int:
        self.ran.append(ctx.kind)
        if self.add_before_cancel:
            self.add(ctx)
        self.started.set()
        if not self.go.wait(30):
            raise RuntimeError("the test never let the racer go")
        if not self.add_before_cancel:
            self.add(ctx)
        return n

    def add(self, ctx: jobtable.JobContext[int]) -> None:
        first = ctx.workflow.add(piece, 1, after=[ctx.workflow.current])
        second = ctx.workflow.add(piece, 2)
        fed = ctx.workflow.add(piece, ctx.workflow.current)
        last = ctx.workflow.add(after, "gather", after=[first, second, fed])
        self.added += [first.id, second.id, fed.id, last.id]

    async def handle_on_the_loop(self, ctx: jobtable.JobContext[int], n: int) -> int:
        return self.handle(ctx, n)  # blocks the runner's event loop meanwhile

    def runner(
        self, store: jobtable.Store, *, block_warning: float | None = 1.0, blocking: bool = False
    ) -> jobtable.Runner:
        """A runner of the racer (on its event loop when blocking) and of the jobs it adds."""
        runner = jobtable.Runner(store, workers=1, block_warning=block_warning)
        if blocking:
            runner.handler(racer)(self.handle_on_the_loop)
        else:
            runner.handler(racer)(self.handle)

        @runner.handler(piece)
        def do_piece(ctx: jobtable.JobContext[int], i: int) -> int:
            self.ran.append(ctx.kind)
            return i

        @runner.handler(after)
        def do_after(ctx: jobtable.JobContext[str], label: str) -> str:
            self.ran.append(ctx.kind)
            return label

        return runner


def workflow_with_a_dependent(store: jobtable.Store) -> tuple[jobtable.Workflow, str, str]:
    """A workflow of a racer and a job after it; returns it with the two ids."""
    wf = jobtable.Workflow("race")
    first = wf.add(racer, 7)
    dependent = wf.add(after, "after the racer", after=[first])
    wf.enqueue(store)
    return wf, first.id, dependent.id


def cancel_of(store: jobtable.Store, which: str, wf: jobtable.Workflow, job_id: str) -> None:
    """Cancels the workflow, or the racer alone."""
    if which == "workflow":
        store.cancel_workflow(wf.id)
    else:
        assert store.cancel(job_id) is jobtable.CancelResult.REQUESTED


@pytest.mark.parametrize("add_before_cancel", [False, True], ids=["add-after", "add-before"])
async def test_a_cancelled_workflow_starts_no_job_after_the_cancel_returned(
    store: jobtable.Store, add_before_cancel: bool
) -> None:
    race = Race(add_before_cancel)
    wf, racer_id, dependent_id = workflow_with_a_dependent(store)
    draining = asyncio.create_task(drain(race.runner(store)))
    assert await asyncio.to_thread(race.started.wait, 30)
    await store.acancel_workflow(wf.id)
    ran_at_cancel = list(race.ran)
    race.go.set()
    records = await draining

    assert ran_at_cancel == ["racer"]
    assert race.ran == ["racer"]  # nothing started after the cancel returned
    assert [(r.kind, r.status) for r in records] == [("racer", Status.SUCCEEDED)]
    record = store.inspect(racer_id)
    assert (record.status, record.result) == (Status.SUCCEEDED, 7)  # it did run to its end
    graph = store.workflow(wf.id)
    assert {job.id: job.status for job in graph.jobs} == {
        racer_id: Status.SUCCEEDED,
        dependent_id: Status.CANCELLED,
        **dict.fromkeys(race.added, Status.CANCELLED),
    }
    for added_id in race.added:
        added = store.inspect(added_id)
        assert added.started_at is None
        assert added.finished_at is not None
        assert added.cancelled_because is None  # cancelled by the cancel, not a dependency
    [summary] = store.workflows()
    assert summary.state == "cancelled"


async def test_a_job_whose_own_cancel_was_requested_adds_no_job_that_runs(
    store: jobtable.Store,
) -> None:
    race = Race(add_before_cancel=False)
    wf, racer_id, dependent_id = workflow_with_a_dependent(store)
    draining = asyncio.create_task(drain(race.runner(store)))
    assert await asyncio.to_thread(race.started.wait, 30)
    await asyncio.to_thread(cancel_of, store, "job", wf, racer_id)
    race.go.set()
    await draining

    # The racer succeeded, so the job that waited for it ran; the jobs it
    # added while its cancel was requested are stored cancelled.
    assert race.ran == ["racer", "after"]
    assert store.inspect(racer_id).status is Status.SUCCEEDED
    assert store.inspect(dependent_id).status is Status.SUCCEEDED
    assert {store.inspect(i).status for i in race.added} == {Status.CANCELLED}


async def test_a_job_added_by_a_cancelled_workflow_runs_once_an_operator_retries_it(
    store: jobtable.Store,
) -> None:
    race = Race(add_before_cancel=False)
    wf, _, _ = workflow_with_a_dependent(store)
    draining = asyncio.create_task(drain(race.runner(store)))
    assert await asyncio.to_thread(race.started.wait, 30)
    await store.acancel_workflow(wf.id)
    race.go.set()
    await draining
    first, second, fed, _ = race.added

    for added_id in (first, second, fed):
        assert store.retry(added_id) is jobtable.RetryResult.RETRIED
    records = await drain(race.runner(store))
    assert sorted((r.id, r.status, r.result) for r in records) == sorted(
        [
            (first, Status.SUCCEEDED, 1),
            (second, Status.SUCCEEDED, 2),
            (fed, Status.SUCCEEDED, 7),  # fed the racer's result
        ]
    )


def _cancel_when_started(
    race: Race, cancel: Callable[[], object], done: list[str]
) -> threading.Thread:
    """A thread that cancels once the racer runs, then lets it go."""

    def run() -> None:
        if race.started.wait(30):
            cancel()
            done.append("cancel returned")
        race.go.set()

    thread = threading.Thread(target=run, name="cancel", daemon=True)
    thread.start()
    return thread


async def test_a_started_runner_starts_no_job_of_a_workflow_cancelled_while_one_ran(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    # The racer's async handler blocks its event loop while another thread
    # cancels the workflow: the runner cannot act on the cancel request
    # before the handler returns, so the cancel races the success.
    race = Race(add_before_cancel=False)
    wf, racer_id, dependent_id = workflow_with_a_dependent(store)
    runner = race.runner(store, block_warning=None, blocking=True)
    done: list[str] = []
    thread = _cancel_when_started(race, lambda: store.cancel_workflow(wf.id), done)
    await runner.start()
    try:
        await wait_until(lambda: store.inspect(racer_id).status is Status.SUCCEEDED, limit=30)
        statuses = {i: store.inspect(i).status for i in [dependent_id, *race.added]}
    finally:
        runner.stop()
        await runner.wait()
        thread.join(30)
    assert done == ["cancel returned"]
    assert set(statuses.values()) == {Status.CANCELLED}
    assert race.ran == ["racer"]
    [summary] = store.workflows()
    assert summary.state == "cancelled"


def _waits_for_a_lock(pg_url: str, application_name: str) -> bool:
    """Whether a session of application_name waits for a lock (within 30 s)."""
    deadline = time.monotonic() + 30
    with psycopg.connect(pg_url, autocommit=True) as admin:
        while time.monotonic() < deadline:
            waiting = admin.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = %s AND wait_event_type = 'Lock'",
                (application_name,),
            ).fetchone()
            if waiting is not None and waiting[0] > 0:
                return True
            time.sleep(0.01)
    return False


def test_a_workflow_cancel_waits_for_a_success_that_adds_jobs_to_it(pg_url: str) -> None:
    # Under READ COMMITTED, a success that commits between the cancel's
    # statements could store jobs the cancel's first statement did not see,
    # by a job its cancel request then found ended: the cancel holds the
    # workflow, and such a success holds it first, so one waits for the other.
    name = f"jobtable-cancel-{secrets.token_hex(4)}"
    with (
        jobtable.Store.open(pg_url) as store,
        jobtable.Store.open(with_query(pg_url, application_name=name)) as canceller,
    ):
        wf = jobtable.Workflow("race")
        wf.add(racer, 7)
        wf.enqueue(store)
        _, [row] = store.engine.write(FinishAndClaim([], "runner", "default", 1, store.now()))
        fanout = FanOut(wf.id, row.id, row.kind, store)
        added = [fanout.add(piece, 1, after=[fanout.current]).id, fanout.add(piece, 2).id]
        success = Finish.succeeded(row, "7")._replace(adds=fanout)
        op = finish_and_claim([success], "runner", "default", 0, store.now())
        recorded, commit = threading.Event(), threading.Event()

        def finishing(q: Queries) -> object:
            result = op(q)
            recorded.set()
            if not commit.wait(30):
                raise RuntimeError("the test never let the success commit")
            return result

        finisher = threading.Thread(target=store.engine.write, args=(finishing,), daemon=True)
        finisher.start()
        assert recorded.wait(30)
        cancel = threading.Thread(target=canceller.cancel_workflow, args=(wf.id,), daemon=True)
        cancel.start()
        waited = _waits_for_a_lock(pg_url, name)
        commit.set()
        finisher.join(30)
        cancel.join(30)
        assert waited
        assert store.inspect(row.id).status is Status.SUCCEEDED
        assert [store.inspect(i).status for i in added] == [Status.CANCELLED] * 2
