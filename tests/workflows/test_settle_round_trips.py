"""What a workflow job's outcome costs on PostgreSQL, in round trips, beside a plain job's.

Every pooled connection writes libpq's trace of the messages it sends
(``PGconn.trace``); with no pipeline, each Sync (an extended-protocol
statement) and each Query (BEGIN, COMMIT) the client sends waits for the
server: a round trip. The outcome that ends a workflow's job stores it and
settles its dependents in one statement (FinishWorkflowJobs), which also
claims the runner's next jobs, so an attempt of a workflow's job, and a
claim that carries its outcome, cost no more round trips than a plain job's.
"""

import pathlib
import re
from collections.abc import Callable, Iterator
from typing import IO, Protocol

import psycopg
import pytest
from psycopg.rows import TupleRow
from seam import claim_rows, now

import jobtable
from jobtable._engines.postgres import engine as postgres_engine
from jobtable._engines.rows import ClaimedRow, Outcome
from jobtable.db.postgres import workflows as postgres_workflows
from jobtable.db.postgres.jobs import FINISH_AND_CLAIM_JOBS

step = jobtable.Kind("trip-step", int, int)
ROUND_TRIP = re.compile(r"^F\t\d+\t(Sync|Query)\b", re.MULTILINE)


class Configure(Protocol):
    """The engine's _configure: what prepares each new connection of its own."""

    def __call__(
        self, durable: bool, idle_timeout: float, *, pooled: bool = False
    ) -> Callable[[psycopg.Connection[TupleRow]], None]: ...


class Traces:
    """libpq's traces of every connection the stores open from now on."""

    def __init__(self, folder: pathlib.Path) -> None:
        self.folder = folder
        self.files: list[IO[str]] = []

    def traced(self, configure: Configure) -> Configure:
        """configure, each connection it prepares tracing into a file of its own."""

        def configured(
            durable: bool, idle_timeout: float, *, pooled: bool = False
        ) -> Callable[[psycopg.Connection[TupleRow]], None]:
            inner = configure(durable, idle_timeout, pooled=pooled)

            def trace(conn: psycopg.Connection[TupleRow]) -> None:
                inner(conn)
                file = (self.folder / f"conn-{len(self.files)}.trace").open("w+")
                self.files.append(file)
                conn.pgconn.trace(file.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)

            return trace

        return configured

    def round_trips(self) -> int:
        """The round trips every traced connection made so far."""
        total = 0
        for file in self.files:
            file.flush()
            total += len(ROUND_TRIP.findall((pathlib.Path(file.name)).read_text()))
        return total


@pytest.fixture
def traces(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Traces]:
    found = Traces(tmp_path)
    monkeypatch.setattr(postgres_engine, "_configure", found.traced(postgres_engine._configure))
    yield found
    for file in found.files:
        file.close()


async def echo(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


async def attempt_trips(store: jobtable.Store, traces: Traces) -> int:
    """The round trips of one runner attempt: its claim, handler and outcome."""
    runner = jobtable.Runner(store, workers=1)
    runner.handler(step)(echo)
    before = traces.round_trips()
    assert await runner.run_next() is not None
    return traces.round_trips() - before


async def test_a_workflow_jobs_attempt_costs_the_round_trips_of_a_plain_jobs(
    pg_url: str, traces: Traces
) -> None:
    with jobtable.Store.open(pg_url) as store:
        step.enqueue(store, 1)
        await attempt_trips(store, traces)  # the pool's connections open
        step.enqueue(store, 2)
        plain = await attempt_trips(store, traces)
        wf = jobtable.Workflow("trips")
        first = wf.add(step, 3)
        fed = wf.add(step, first)
        waits = wf.add(step, 4, after=[first])
        wf.enqueue(store)
        workflow = await attempt_trips(store, traces)

        assert workflow == plain
        assert store.get(fed.id).status is jobtable.Status.QUEUED
        assert store.get(waits.id).status is jobtable.Status.QUEUED
        assert store.inspect(fed.id).payload == 3


def finish_trips(store: jobtable.Store, traces: Traces, job: ClaimedRow, workflow: bool) -> int:
    """The round trips of the runner's write storing job's success and claiming one more job."""
    done = Outcome(job.id, job.attempt, "succeeded", "1", None, None, workflow=workflow)
    before = traces.round_trips()
    finished, more = store.engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[done], runner="r", queue="default", now=now(), max_jobs=1
        )
    )
    assert finished == [job.id]
    assert len(more) == 1
    return traces.round_trips() - before


def test_an_outcome_that_settles_and_the_next_claim_cost_a_plain_outcomes_trips(
    pg_url: str, traces: Traces
) -> None:
    with jobtable.Store.open(pg_url) as store:
        wf = jobtable.Workflow("trips")
        first = wf.add(step, 3)
        after = wf.add(step, 4, after=[first])
        wf.enqueue(store)
        step.enqueue_many(store, [1, 2, 3, 4, 5, 6])
        [root] = store.engine.write(lambda q: claim_rows(q, 1))
        [plain] = store.engine.write(lambda q: claim_rows(q, 1))
        assert root.id == first.id
        [warm] = store.engine.write(lambda q: claim_rows(q, 1))
        finish_trips(store, traces, warm, workflow=False)  # the pool's connections open
        plain_trips = finish_trips(store, traces, plain, workflow=False)
        assert finish_trips(store, traces, root, workflow=True) == plain_trips
        assert store.get(after.id).status is jobtable.Status.QUEUED


def test_the_finishing_statement_stores_and_settles_as_the_statements_it_stands_for() -> None:
    finish = postgres_workflows.FINISH_WORKFLOW_JOBS
    # Its outcomes are stored as FinishAndClaimJobs stores them...
    stored = FINISH_AND_CLAIM_JOBS[: FINISH_AND_CLAIM_JOBS.index("picked AS")]
    returned = "RETURNING jobs.id, jobs.status"
    assert (
        stored.replace("WITH finished", "WITH RECURSIVE finished").replace(
            returned, returned + ", jobs.workflow_id, jobs.result"
        )
        in finish
    )
    # ...and its jobs settled as SettleDependents settles them, from their roots on.
    settle = postgres_workflows.SETTLE_DEPENDENTS
    tail = settle[settle.index("doomed (id, cause)") : settle.index("SELECT count(*)")]
    assert tail.rstrip("\n") in finish
    # ...and it claims as FinishAndClaimJobs claims, but for its optional kinds.
    claim = FINISH_AND_CLAIM_JOBS[FINISH_AND_CLAIM_JOBS.index("picked AS") :]
    kinds = "        AND (%(kinds)s::text[] IS NULL OR ready.kind = ANY(%(kinds)s::text[]))\n"
    assert kinds in finish
    ours = finish[finish.index("picked AS") :].replace(kinds, "")
    assert ours.split("SELECT false AS finished")[0] == claim.split("SELECT false AS finished")[0]
