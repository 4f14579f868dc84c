"""The SQLite engine's workflow queries in the shape of the seam's ``WorkflowQueries``."""

import json
import sqlite3
from collections.abc import Sequence

from jobtable._engines.dependencies import settle_steps
from jobtable._engines.workflow_queries import (
    CommonWorkflowQueries,
    DependencyRow,
    JobDep,
    WorkflowJob,
)
from jobtable.db.sqlite import workflows


class SQLiteWorkflowQueries(CommonWorkflowQueries[str]):
    """Workflows' queries on one connection of the writer."""

    _wf: workflows.Querier

    def __init__(self, conn: sqlite3.Connection) -> None:
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
        row = self._wf.create_workflow(
            id=id, name=name, now=now, deadline_at=deadline_at, concurrency=concurrency
        )
        return None if row is None else row.slot

    def workflow_slot(self, *, id: str) -> str | None:
        row = self._wf.get_workflow(id=id)
        return None if row is None else row.slot

    def retake_workflow_slot(self, *, id: str) -> None:
        self._wf.retake_workflow_slot(id=id)

    def overdue_workflows(self, *, now: str, max_workflows: int) -> list[str]:
        rows = self._wf.list_overdue_workflows(now=now, max_workflows=max_workflows)
        return [row.id for row in rows]

    def cancel_added_jobs(self, *, ids: Sequence[str], adder: str, now: str) -> int:
        return self._wf.cancel_added_jobs(now=now, ids=json.dumps(list(ids)), adder=adder)

    def hand_over_dependents(self, *, job: str, heir: str, ids: Sequence[str], now: str) -> None:
        added = json.dumps(list(ids))
        self._wf.hand_over_dependents(heir=heir, job=job, ids=added)
        self._wf.count_handed_over(now=now, heir=heir, ids=added)

    def insert_workflow_jobs(
        self, *, workflow_id: str, jobs: Sequence[WorkflowJob], now: str
    ) -> None:
        self._wf.create_workflow_jobs(
            workflows.CreateWorkflowJobsParams(
                **w.job.fields(w.kind, now),
                workflow_id=workflow_id,
                pending_deps=w.pending_deps,
                partition_by=w.job.partition_by,
                sequence_by=w.job.sequence_by,
            )
            for w in jobs
        )

    def create_job_deps(self, *, deps: Sequence[JobDep]) -> None:
        self._wf.create_job_deps(
            workflows.CreateJobDepsParams(d.dep, d.job, int(d.run_on_failure), int(d.feeds))
            for d in deps
        )

    def settle_ended(self, *, ids: Sequence[str], now: str) -> None:
        # A statement a step: SQLite has no round trip to save.
        for job_id in ids:
            settle_steps(self, job_id, now)

    def dep_state(self, *, id: str) -> tuple[str, str | None] | None:
        row = self._wf.get_dep_state(id=id)
        return None if row is None else (row.status, row.workflow_id)

    def feed_dependents(self, *, dep: str) -> int:
        return self._wf.feed_dependents(dep=dep)

    def release_dependents(self, *, dep: str, succeeded: bool, now: str) -> int:
        return self._wf.release_dependents(now=now, dep=dep, succeeded=int(succeeded))

    def mark_deps_done(self, *, dep: str, succeeded: bool) -> None:
        self._wf.mark_deps_done(dep=dep, succeeded=int(succeeded))

    def cancel_dependents(self, *, dep: str, now: str) -> list[str]:
        return [row.id for row in self._wf.cancel_dependents(dep=dep, now=now)]

    def revive_dependents(self, *, dep: str, now: str) -> list[str]:
        return [row.id for row in self._wf.revive_dependents(now=now, dep=dep)]

    def reopen_dependents(self, *, dep: str, now: str) -> None:
        self._wf.reopen_dependents(dep=dep, now=now)
        self._wf.reopen_dep_edges(dep=dep)

    def list_dependencies(self, *, job: str) -> Sequence[DependencyRow]:
        return [
            DependencyRow(r.id, r.kind, r.status, r.result, bool(r.run_on_failure))
            for r in self._wf.list_dependencies(job=job)
        ]

    def delete_empty_workflows(self, *, before: str, max_workflows: int) -> int:
        return self._wf.delete_empty_workflows(before=before, max_workflows=max_workflows)

    def cancel_workflow_jobs(self, *, workflow_id: str, now: str) -> list[str]:
        return [row.id for row in self._wf.cancel_workflow_jobs(now=now, workflow_id=workflow_id)]

    def request_cancel_workflow(self, *, workflow_id: str, now: str) -> int:
        return self._wf.request_cancel_workflow(now=now, workflow_id=workflow_id)

    def notify_ready(self) -> None:
        """Does nothing: runners watch the file's writes."""
