"""The SQLite engine's queries: its generated Queriers composed in the shape of the seam.

Nothing but the engine imports it. As the PostgreSQL adapter does, it holds
the generated Queriers and calls them, adding the seam's calls that take
several rows or outcomes at once; it computes the lease cutoffs from the
runner's own clock (a SQLite file is shared by the processes of one machine).
"""

import datetime
import json
import sqlite3
from collections.abc import Sequence

from jobtable._engines.base import Queries as SeamQueries
from jobtable._engines.dependencies import settle_dependents
from jobtable._engines.job_queries import CommonJobQueries
from jobtable._engines.operator_queries import RunnerRow
from jobtable._engines.rows import (
    BacklogRow,
    ClaimedRow,
    HeldRow,
    JobRow,
    NewJob,
    Outcome,
    seam_time,
    stored,
    stored_time,
)
from jobtable._engines.sqlite.dashboard_queries import SQLiteDashboardQueries
from jobtable._engines.sqlite.flow_queries import SQLiteFlowQueries
from jobtable._engines.sqlite.operator_queries import SQLiteOperatorQueries
from jobtable._engines.sqlite.step_queries import SQLiteStepQueries
from jobtable._engines.sqlite.wait_queries import SQLiteWaitQueries
from jobtable._engines.sqlite.workflow_queries import SQLiteWorkflowQueries
from jobtable._values import timestamp
from jobtable.db.sqlite import jobs
from jobtable.db.sqlite.jobs import CreateJobsParams


def _before(now: str, seconds: float) -> str:
    moment = seam_time(now) - datetime.timedelta(seconds=seconds)
    return timestamp(moment)


class _Queries(
    CommonJobQueries,
    SQLiteOperatorQueries,
    SQLiteFlowQueries,
    SQLiteWorkflowQueries,
    SQLiteDashboardQueries,
    SQLiteStepQueries,
    SQLiteWaitQueries,
):
    """The generated jobs Querier in the shape of the ``Queries`` seam.

    Operators', flow control's, workflows', the dashboard's, the steps' and
    waiting's queries come from the bases; all share the connection.
    """

    _q: jobs.Querier

    def __init__(self, conn: sqlite3.Connection) -> None:
        SQLiteOperatorQueries.__init__(self, conn)
        SQLiteFlowQueries.__init__(self, conn)
        SQLiteWorkflowQueries.__init__(self, conn)
        SQLiteDashboardQueries.__init__(self, conn)
        SQLiteStepQueries.__init__(self, conn)
        SQLiteWaitQueries.__init__(self, conn)
        self._conn = conn
        self._q = jobs.Querier(conn)

    def insert_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        if len(jobs) == 1:
            self._q.create_job(**jobs[0].fields(kind, now))
            return
        self._q.create_jobs(CreateJobsParams(**job.fields(kind, now)) for job in jobs)

    def insert_unique_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> list[bool]:
        return [
            self._q.create_unique_job(
                **job.fields(kind, now),
                unique_key=job.unique_key,
                unique_statuses=job.unique_statuses,
            )
            == 1
            for job in jobs
        ]

    def insert_debounced_job(self, *, kind: str, job: NewJob, now: str) -> bool:
        fields = job.fields(kind, now)
        return self._q.create_debounced_job(**fields, debounce_key=job.debounce_key) == 1

    def debounce_job(
        self, *, kind: str, debounce_key: str, payload: str, replace: bool, run_at: str, now: str
    ) -> str | None:
        row = self._q.debounce_job(
            replace=replace,
            payload=payload,
            run_at=run_at,
            now=now,
            kind=kind,
            debounce_key=debounce_key,
        )
        return None if row is None else row.id

    def get_jobs(self, *, ids: Sequence[str]) -> Sequence[JobRow]:
        return self._q.get_jobs(ids=json.dumps(list(ids)))

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
        # A statement per job costs no round trip here: they all share the
        # writer's transaction.
        finished: list[str] = []
        for o in outcomes:
            trace, job, attempt = o.run_trace, o.id, o.attempt
            if o.state == "succeeded":
                count = self._q.succeed_job(
                    result=o.result, now=now, run_trace=trace, id=job, attempt=attempt
                )
            elif o.state == "failed":
                count = self._q.fail_job(
                    error=o.error, now=now, run_trace=trace, id=job, attempt=attempt
                )
            elif o.state == "cancelled":
                count = self._q.cancel_running_job(
                    now=now, run_trace=trace, id=job, attempt=attempt
                )
            elif o.error is None:
                count = self._q.snooze_job(
                    run_at=o.run_at or now, now=now, id=o.id, attempt=o.attempt
                )
            else:
                count = self._q.retry_job(
                    error=o.error, now=now, run_at=o.run_at or now, id=o.id, attempt=o.attempt
                )
            if count:
                finished.append(o.id)
                if o.workflow:
                    settle_dependents(self, o.id, now)
        if max_jobs <= 0:
            return finished, []
        if kinds is not None:
            return finished, self._q.claim_next_job_of_kinds(
                runner=runner,
                now=now,
                queue=queue,
                kinds=json.dumps(list(kinds)),
                max_jobs=max_jobs,
            )
        return finished, self._q.claim_next_job(
            runner=runner, now=now, queue=queue, max_jobs=max_jobs
        )

    def notify_cancel(self) -> None:
        """Does nothing: SQLite has no NOTIFY, so runners poll for cancel requests."""

    def next_run_at(self, *, queue: str) -> datetime.datetime | None:
        row = self._q.next_run_at(queue=queue)
        return None if row is None else stored_time(row.run_at)

    def interrupt_jobs_of_dead_runners(
        self, *, error: str, now: str, lease: float, runner: str
    ) -> int:
        return self._q.interrupt_jobs_of_dead_runners(
            error=error, now=now, runner=runner, cutoff=_before(now, lease)
        )

    def get_runner(self, *, name: str, now: str, lease: float) -> RunnerRow | None:
        row = self._q.get_runner(cutoff=_before(now, lease), name=name)
        return None if row is None else stored(RunnerRow, row)

    def delete_dead_runners(self, *, now: str, lease: float, name: str) -> int:
        return self._q.delete_dead_runners(cutoff=_before(now, lease), name=name)

    def ready_retries(self, *, queue: str) -> int:
        return self._q.ready_retries(queue=queue)

    def jobs_statistics_stale(self) -> bool:
        return False

    def analyze_jobs(self) -> None:
        return None

    def cancel_queued_job(self, *, now: str, id: str) -> int:
        return self._q.cancel_queued_job(now=now, id=id)

    def count_due_jobs(self, *, now: str) -> Sequence[BacklogRow]:
        return [stored(BacklogRow, row) for row in self._q.count_due_jobs(now=now)]

    def delete_finished_jobs(self, *, before: str, max_jobs: int) -> int:
        return self._q.delete_finished_jobs(before=before, max_jobs=max_jobs)

    def delete_runner(self, *, name: str) -> None:
        return self._q.delete_runner(name=name)

    def fail_job(
        self, *, error: str | None, now: str, id: str, attempt: int, run_trace: str | None
    ) -> int:
        return self._q.fail_job(error=error, now=now, run_trace=run_trace, id=id, attempt=attempt)

    def heartbeat_runner(self, *, now: str, name: str) -> int:
        return self._q.heartbeat_runner(now=now, name=name)

    def interrupt_job(self, *, error: str, now: str, id: str, attempt: int) -> int:
        return self._q.interrupt_job(error=error, now=now, id=id, attempt=attempt)

    def interrupt_running_jobs(self, *, error: str, now: str, runner: str) -> int:
        return self._q.interrupt_running_jobs(error=error, now=now, runner=runner)

    def list_running_jobs(self, *, runner: str | None, before: str) -> Sequence[HeldRow]:
        return self._q.list_running_jobs(runner=runner, before=before)

    def publish_job_result(self, *, result: str | None, now: str, id: str, attempt: int) -> int:
        return self._q.publish_job_result(result=result, now=now, id=id, attempt=attempt)

    def register_runner(
        self, *, name: str, now: str, host: str | None, process: str | None
    ) -> None:
        return self._q.register_runner(name=name, now=now, host=host, process=process)

    def request_cancel(self, *, now: str, id: str) -> int:
        return self._q.request_cancel(now=now, id=id)

    def set_runner_missing_keys(self, *, missing_keys: str | None, name: str) -> None:
        return self._q.set_runner_missing_keys(missing_keys=missing_keys, name=name)

    def stage_jobs(self, *, queue: str, now: str) -> int:
        return self._q.stage_jobs(queue=queue, now=now)

    def succeed_job(
        self, *, result: str | None, now: str, id: str, attempt: int, run_trace: str | None
    ) -> int:
        return self._q.succeed_job(
            result=result, now=now, run_trace=run_trace, id=id, attempt=attempt
        )


def queries(conn: sqlite3.Connection) -> SeamQueries:
    """The seam's queries on conn; typed as the seam so that mypy proves _Queries satisfies it."""
    return _Queries(conn)
