"""The PostgreSQL engine's workflow queries in the shape of the seam's ``WorkflowQueries``."""

import datetime
from collections.abc import Sequence
from typing import cast

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.postgres.ends import notify_ended, notify_released
from jobtable._engines.postgres.job_rows import zoned
from jobtable._engines.rows import seam_time
from jobtable._engines.workflow_queries import (
    CommonWorkflowQueries,
    DependencyRow,
    JobDep,
    WorkflowJob,
)
from jobtable.db.postgres import workflows
from jobtable.db.postgres.models import JSONValue


class PostgresWorkflowQueries(CommonWorkflowQueries[datetime.datetime]):
    """Workflows' queries on one connection."""

    _wf: workflows.Querier

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._conn = conn
        self._wf = workflows.Querier(conn)

    def create_workflow(
        self,
        *,
        id: str,
        name: str,
        now: str,
        deadline_at: str | None,
        concurrency: int | None = None,
    ) -> str | None:
        if concurrency is not None:
            self._wf.lock_workflow_slots()
        row = self._wf.create_workflow(
            id=id,
            name=name,
            now=seam_time(now),
            deadline_at=None if deadline_at is None else seam_time(deadline_at),
            concurrency=concurrency,
        )
        return None if row is None else row.slot

    def workflow_slot(self, *, id: str) -> str | None:
        row = self._wf.get_workflow(id=id)
        return None if row is None else row.slot

    def retake_workflow_slot(self, *, id: str) -> None:
        self._wf.retake_workflow_slot(id=id)

    def overdue_workflows(self, *, now: str, max_workflows: int) -> list[str]:
        rows = self._wf.list_overdue_workflows(now=seam_time(now), max_workflows=max_workflows)
        return [row.id for row in rows]

    def cancel_added_jobs(self, *, ids: Sequence[str], adder: str, now: str) -> int:
        return self._wf.cancel_added_jobs(now=seam_time(now), ids=list(ids), adder=adder)

    def hand_over_dependents(self, *, job: str, heir: str, ids: Sequence[str], now: str) -> None:
        self._wf.hand_over_dependents(heir=heir, job=job, ids=list(ids))
        self._wf.count_handed_over(now=seam_time(now), heir=heir, ids=list(ids))

    def insert_workflow_jobs(
        self, *, workflow_id: str, jobs: Sequence[WorkflowJob], now: str
    ) -> None:
        # As CreateJobs: the times as the seam's zoned text (see JobRows).
        moment = zoned(now)
        rows = [
            {
                **w.job.fields(w.kind, moment),
                "run_at": zoned(w.job.run_at),
                "pending_deps": w.pending_deps,
                "partition_by": w.job.partition_by,
                "sequence_by": w.job.sequence_by,
            }
            for w in jobs
        ]
        self._wf.create_workflow_jobs(workflow_id=workflow_id, jobs=cast("JSONValue", rows))

    def create_job_deps(self, *, deps: Sequence[JobDep]) -> None:
        rows = [d._asdict() for d in deps]
        self._wf.create_job_deps(deps=cast("JSONValue", rows))

    def settle_ended(self, *, ids: Sequence[str], now: str) -> None:
        self._wf.settle_dependents(ids=list(ids), now=seam_time(now))

    def revive_dependents(self, *, dep: str, now: str) -> list[str]:
        return [row.id for row in self._wf.revive_dependents(now=seam_time(now), dep=dep)]

    def reopen_dependents(self, *, dep: str, now: str) -> None:
        self._wf.reopen_dependents(dep=dep, now=seam_time(now))
        self._wf.reopen_dep_edges(dep=dep)

    def list_dependencies(self, *, job: str) -> Sequence[DependencyRow]:
        return [
            DependencyRow(r.id, r.kind, r.status, r.result, r.run_on_failure)
            for r in self._wf.list_dependencies(job=job)
        ]

    def delete_empty_workflows(self, *, before: str, max_workflows: int) -> int:
        return self._wf.delete_empty_workflows(
            before=seam_time(before), max_workflows=max_workflows
        )

    def cancel_workflow_jobs(self, *, workflow_id: str, now: str) -> list[str]:
        ids = [
            row.id
            for row in self._wf.cancel_workflow_jobs(now=seam_time(now), workflow_id=workflow_id)
        ]
        if ids:
            notify_ended(self._conn, ids)
            notify_released(self._conn)  # a sequence that continues past them may go on
        return ids

    def request_cancel_workflow(self, *, workflow_id: str, now: str) -> int:
        return self._wf.request_cancel_workflow(now=seam_time(now), workflow_id=workflow_id)
