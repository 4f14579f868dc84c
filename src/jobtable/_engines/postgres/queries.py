"""The PostgreSQL engine's queries: the generated Querier in the shape of the ``Queries`` seam.

Nothing but the engine imports it. The seam passes times in as UTC text,
which ``seam_time`` makes the datetimes of the generated code (timestamptz),
and takes them out as those datetimes.
Lease arithmetic is left to the server's clock, so the ``now`` the seam
passes for it is not used.
"""

import dataclasses
import datetime
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.base import Queries
from jobtable._engines.job_queries import CommonJobQueries
from jobtable._engines.operator_queries import RunnerRow
from jobtable._engines.postgres.claim_cursor import ClaimCursors
from jobtable._engines.postgres.dashboard_queries import PostgresDashboardQueries
from jobtable._engines.postgres.ends import notify_ended, notify_released
from jobtable._engines.postgres.flow_queries import PostgresFlowQueries
from jobtable._engines.postgres.job_rows import JobRows, timed
from jobtable._engines.postgres.operator_queries import PostgresOperatorQueries
from jobtable._engines.postgres.outcomes import OutcomeArrays, outcome_arrays
from jobtable._engines.postgres.step_queries import PostgresStepQueries
from jobtable._engines.postgres.wait_queries import PostgresWaitQueries
from jobtable._engines.postgres.workflow_queries import PostgresWorkflowQueries
from jobtable._engines.rows import (
    BacklogRow,
    ClaimedRow,
    HeldRow,
    JobRow,
    NewJob,
    Outcome,
    seam_time,
    stored,
)
from jobtable.db.postgres import jobs, workflows
from jobtable.db.postgres.jobs import CreateUniqueJobsParams

_Connection = psycopg.Connection[TupleRow]


class _Claim(TypedDict):
    """The claim's parameters of the statements that store outcomes and claim."""

    now: datetime.datetime
    queue: str
    after_priority: int
    after_seq: int
    max_jobs: int
    runner: str | None


class _Queries(
    CommonJobQueries,
    PostgresOperatorQueries,
    PostgresFlowQueries,
    PostgresWorkflowQueries,
    PostgresDashboardQueries,
    PostgresStepQueries,
    PostgresWaitQueries,
):
    """The generated Querier in the shape of the ``Queries`` seam.

    Operators', flow control's, the dashboard's and the steps' queries come
    from the bases.
    """

    _q: jobs.Querier

    def __init__(self, conn: _Connection, cursors: ClaimCursors | None) -> None:
        PostgresOperatorQueries.__init__(self, conn)
        PostgresFlowQueries.__init__(self, conn)
        PostgresStepQueries.__init__(self, conn)
        PostgresWaitQueries.__init__(self, conn)
        PostgresWorkflowQueries.__init__(self, conn)
        self._conn = conn
        self._q = jobs.Querier(conn)
        # Where this process's claims stopped; an application's transaction
        # has none of its own and claims from each queue's head.
        self._cursors = ClaimCursors() if cursors is None else cursors
        # Whether a call may have made a job ready behind those places.
        self.rewinds = False

    def insert_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        rows = JobRows()
        rows.insert_jobs(kind=kind, jobs=jobs, now=now)
        rows.store(self._conn)

    def insert_unique_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> list[bool]:
        params = [
            CreateUniqueJobsParams(
                **timed(job.fields(kind, now)),
                unique_key=job.unique_key,
                unique_statuses=job.unique_statuses,
            )
            for job in jobs
        ]
        if len(params) == 1:
            # One statement, without the pipeline's own round trips.
            return [self._q.create_unique_job(**dataclasses.asdict(params[0])) == 1]
        return [row is not None for row in self._q.create_unique_jobs(params)]

    def insert_debounced_job(self, *, kind: str, job: NewJob, now: str) -> bool:
        fields = timed(job.fields(kind, now))
        return self._q.create_debounced_job(**fields, debounce_key=job.debounce_key) == 1

    def debounce_job(
        self, *, kind: str, debounce_key: str, payload: str, replace: bool, run_at: str, now: str
    ) -> str | None:
        row = self._q.debounce_job(
            replace=replace,
            payload=payload,
            run_at=seam_time(run_at),
            now=seam_time(now),
            kind=kind,
            debounce_key=debounce_key,
        )
        return None if row is None else row.id

    def publish_job_result(self, *, result: str | None, now: str, id: str, attempt: int) -> int:
        return self._q.publish_job_result(result=result, now=seam_time(now), id=id, attempt=attempt)

    def succeed_job(
        self, *, result: str | None, now: str, id: str, attempt: int, run_trace: str | None
    ) -> int:
        return self._q.succeed_job(
            result=result, now=seam_time(now), run_trace=run_trace, id=id, attempt=attempt
        )

    def fail_job(
        self, *, error: str | None, now: str, id: str, attempt: int, run_trace: str | None
    ) -> int:
        return self._q.fail_job(
            error=error, now=seam_time(now), run_trace=run_trace, id=id, attempt=attempt
        )

    def finish_and_claim_jobs(
        self,
        *,
        outcomes: Sequence[Outcome],
        runner: str | None,
        queue: str,
        now: str,
        max_jobs: int,
        kinds: Sequence[str] | None = None,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        arrays = outcome_arrays(outcomes)
        workflow = any(o.workflow for o in outcomes)
        claims = self._finish_and_claim(
            arrays, workflow, runner, queue, seam_time(now), max_jobs, kinds
        )
        claimed = [row for row in claims if not row.finished]
        self._cursors.claimed(queue, kinds, ((row.priority, row.seq) for row in claimed))
        if workflow or any(outcome.state == "queued" for outcome in outcomes):
            # The dependents it made ready, or a retry, keep their seqs: each
            # may stand behind the place of its queue, which need not be queue
            # (a record alone names none).
            self._cursors.rewind()
        return [row.id for row in claims if row.finished], claimed

    def _finish_and_claim(
        self,
        arrays: OutcomeArrays,
        workflow: bool,
        runner: str | None,
        queue: str,
        now: datetime.datetime,
        max_jobs: int,
        kinds: Sequence[str] | None,
    ) -> Sequence[
        jobs.FinishAndClaimJobsRow
        | jobs.FinishAndClaimJobsOfKindsRow
        | workflows.FinishWorkflowJobsRow
    ]:
        """One statement: the outcomes stored (a workflow's jobs' settling their
        dependents), then the claim from the queue's place."""
        after_priority, after_seq = self._cursors.start(queue, kinds)
        claim = _Claim(
            now=now,
            queue=queue,
            after_priority=after_priority,
            after_seq=after_seq,
            max_jobs=max_jobs,
            runner=runner,
        )
        if workflow:
            named: list[str | None] | None = None if kinds is None else list(kinds)
            return self._wf.finish_workflow_jobs(kinds=named, **claim, **arrays)
        if kinds is None:
            return self._q.finish_and_claim_jobs(**claim, **arrays)
        return self._q.finish_and_claim_jobs_of_kinds(kinds=list(kinds), **claim, **arrays)

    def next_run_at(self, *, queue: str) -> datetime.datetime | None:
        row = self._q.next_run_at(queue=queue)
        return None if row is None else row.run_at

    def stage_jobs(self, *, queue: str, now: str) -> int:
        staged = self._q.stage_jobs(queue=queue, now=seam_time(now))
        if staged:
            self._cursors.rewind(queue)  # they keep the seqs of their enqueues
        return staged

    def ready_retries(self, *, queue: str) -> int:
        ready = self._q.ready_retries(queue=queue)
        if ready:
            self._cursors.rewind(queue)
        return ready

    # An interrupt fails or cancels the jobs whose attempts are spent, and
    # notifies (NotifyJobsEnded), so that their waits return at its commit;
    # it puts the others back in their queues and frees the slots and the
    # sequences they held, so idle runners look again (notify_released).

    def interrupt_running_jobs(self, *, error: str, now: str, runner: str) -> int:
        count = self._q.interrupt_running_jobs(error=error, now=seam_time(now), runner=runner)
        if count:
            notify_ended(self._conn)
            notify_released(self._conn)
        return count

    def interrupt_jobs_of_dead_runners(
        self, *, error: str, now: str, lease: float, runner: str
    ) -> int:
        count = self._q.interrupt_jobs_of_dead_runners(
            error=error, now=seam_time(now), runner=runner, lease_seconds=lease
        )
        if count:
            notify_ended(self._conn)
            notify_released(self._conn)
        return count

    def interrupt_job(self, *, error: str, now: str, id: str, attempt: int) -> int:
        count = self._q.interrupt_job(error=error, now=seam_time(now), id=id, attempt=attempt)
        if count:
            notify_ended(self._conn, [id])
            notify_released(self._conn)
        return count

    def list_running_jobs(self, *, runner: str | None, before: str) -> Sequence[HeldRow]:
        return self._q.list_running_jobs(runner=runner, before=seam_time(before))

    def cancel_queued_job(self, *, now: str, id: str) -> int:
        # A cancelled job no longer holds a sequence that continues past it.
        count = self._q.cancel_queued_job(now=seam_time(now), id=id)
        if count:
            notify_released(self._conn)
        return count

    def request_cancel(self, *, now: str, id: str) -> int:
        return self._q.request_cancel(now=seam_time(now), id=id)

    def notify_cancel(self) -> None:
        self._q.notify_cancel()

    def get_jobs(self, *, ids: Sequence[str]) -> Sequence[JobRow]:
        return self._q.get_jobs(ids=list(ids))

    def count_due_jobs(self, *, now: str) -> Sequence[BacklogRow]:
        return [stored(BacklogRow, row) for row in self._q.count_due_jobs(now=seam_time(now))]

    def delete_finished_jobs(self, *, before: str, max_jobs: int) -> int:
        return self._q.delete_finished_jobs(before=seam_time(before), max_jobs=max_jobs)

    def register_runner(
        self, *, name: str, now: str, host: str | None, process: str | None
    ) -> None:
        self._q.register_runner(name=name, host=host, process=process)

    def heartbeat_runner(self, *, now: str, name: str) -> int:
        return self._q.heartbeat_runner(name=name)

    def set_runner_missing_keys(self, *, missing_keys: str | None, name: str) -> None:
        self._q.set_runner_missing_keys(missing_keys=missing_keys, name=name)

    def get_runner(self, *, name: str, now: str, lease: float) -> RunnerRow | None:
        row = self._q.get_runner(lease_seconds=lease, name=name)
        return None if row is None else stored(RunnerRow, row)

    def delete_runner(self, *, name: str) -> None:
        self._q.delete_runner(name=name)

    def jobs_statistics_stale(self) -> bool:
        row = self._q.jobs_statistics_stale()
        return row is not None and row.stale

    def analyze_jobs(self) -> None:
        self._q.set_analyze_lock_timeout()
        self._q.analyze_jobs()

    def delete_dead_runners(self, *, now: str, lease: float, name: str) -> int:
        return self._q.delete_dead_runners(lease_seconds=lease, name=name)


KEEP_PLACES = frozenset(
    {
        "insert_jobs",
        "insert_unique_jobs",
        "get_unique_holder",
        "publish_job_result",
        "succeed_job",
        "fail_job",
        "finish_and_claim_jobs",
        "next_run_at",
        "stage_jobs",
        "ready_retries",
        "list_running_jobs",
        "list_cancel_requests",
        "get_job",
        "get_jobs",
        "get_job_progress",
        "heartbeat_runner",
        "record_job_step",
        "get_job_step",
        "list_job_steps",
    }
)
"""The calls that cannot make a job ready behind a place claims stopped, or rewind themselves.

Every other call of ``_Queries`` in a write marks it (``rewinds``), and the
engine rewinds its claims after the write commits: a feature added later
rewinds by default, so no job it makes ready waits for the rescan.
"""


def _marking(name: str, own: Callable[..., Any] | None) -> Callable[..., Any]:
    """name's method of _Queries, marking the call: own (defined on _Queries) or its base's.

    A base's method is looked up at each call, so that what replaces it on
    the base (a test's patch) still runs.
    """
    if own is not None:
        method = own

        @functools.wraps(own)
        def call(self: _Queries, *args: Any, **kwargs: Any) -> Any:
            self.rewinds = True
            return method(self, *args, **kwargs)

        return call

    def inherited(self: _Queries, *args: Any, **kwargs: Any) -> Any:
        self.rewinds = True
        return getattr(super(_Queries, self), name)(*args, **kwargs)

    inherited.__name__ = name
    return inherited


for _name in dir(_Queries):
    marks = not _name.startswith("_") and _name not in KEEP_PLACES
    if marks and callable(getattr(_Queries, _name)):
        setattr(_Queries, _name, _marking(_name, _Queries.__dict__.get(_name)))


def queries(conn: _Connection, cursors: ClaimCursors | None = None) -> Queries:
    """The seam's queries on conn; typed as the seam so that mypy proves _Queries satisfies it.

    cursors: where the process's claims stopped (the engine's), or None for
    claims from each queue's head.
    """
    return _Queries(conn, cursors)
