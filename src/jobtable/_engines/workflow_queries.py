"""The workflows' queries at the seam: jobs with dependencies, as each engine's adapter runs them.

Times go in as UTC text and come out as aware UTC datetimes, and flags are
bools; each engine's adapter (``sqlite/workflow_queries.py``,
``postgres/workflow_queries.py``) converts them for its generated Querier
(queries/workflows.sql).
"""

import datetime
from collections.abc import Sequence
from typing import Generic, NamedTuple, Protocol, TypeVar

from jobtable._engines.rows import NewJob, stored


class DependencyRow(NamedTuple):
    """A job on one side of a dependency: its id, kind, status and stored result."""

    id: str
    kind: str
    status: str
    result: str | None
    run_on_failure: bool


class WorkflowJob(NamedTuple):
    """A job of a workflow to store: its kind, the job, and how many dependencies it waits for."""

    kind: str
    job: NewJob
    pending_deps: int


class WorkflowCountRow(NamedTuple):
    """A listed workflow and how many of its jobs are in one status (None: it has no job left)."""

    id: str
    name: str
    created_at: datetime.datetime
    status: str | None
    jobs: int


class JobDep(NamedTuple):
    """A dependency to store: job waits for dep; feeds: dep's result is job's payload."""

    dep: str
    job: str
    run_on_failure: bool
    feeds: bool


_Moment = TypeVar("_Moment", str, datetime.datetime)


def past_deadline(
    status: str, finished: _Moment | None, deadline: _Moment | None, done: object
) -> bool:
    """Whether a job ended cancelled at or after its workflow's deadline, which was acted on."""
    if status != "cancelled" or not done or finished is None or deadline is None:
        return False
    return finished >= deadline


class JobWorkflowRow(NamedTuple):
    """A job's workflow (id and name, None for none) and the dependency that cancelled it.

    past_deadline: the job was cancelled at or after its workflow's deadline,
    which the maintenance acted on.
    """

    workflow_id: str | None
    workflow_name: str | None
    blocked_by: str | None
    past_deadline: bool = False


class WorkflowJobRow(NamedTuple):
    """A job of a workflow as its graph shows it: id, kind, status and times.

    created_at is its enqueue; started_at its last claim and finished_at
    its end, each None until then.
    """

    id: str
    kind: str
    status: str
    created_at: datetime.datetime
    started_at: datetime.datetime | None = None
    finished_at: datetime.datetime | None = None


class WorkflowQueries(Protocol):
    """The queries of workflows (queries/workflows.sql)."""

    def create_workflow(
        self,
        *,
        id: str,
        name: str,
        now: str,
        deadline_at: str | None,
        concurrency: int | None = None,
    ) -> str | None:
        """Names a new workflow, with its deadline and concurrency limit or none; returns its slot.

        None without a limit; "held" when the held workflows of its name
        leave room, else "waiting": its jobs then count the slot as one more
        dependency until it is admitted.
        """
        ...

    def workflow_slot(self, *, id: str) -> str | None:
        """The workflow's slot: None (no limit, or unknown id), "waiting", "held" or "freed"."""
        ...

    def retake_workflow_slot(self, *, id: str) -> None:
        """Makes the workflow hold its slot again if it was freed: jobs were added to it."""
        ...

    def overdue_workflows(self, *, now: str, max_workflows: int) -> list[str]:
        """Up to max_workflows workflows whose deadline passed by now, not yet acted on."""
        ...

    def mark_deadline_done(self, *, id: str) -> None:
        """Records that the maintenance acted on the workflow's deadline: it never acts again."""
        ...

    def workflow_name(self, *, id: str) -> str | None:
        """The workflow's name, None for an unknown id."""
        ...

    def lock_workflow(self, *, id: str) -> bool:
        """Whether the workflow exists; it is held against added jobs until the transaction ends.

        For a cancel of the workflow: a success that adds jobs to it
        (``hold_workflow``) waits until the cancel commits, or the cancel
        waits until that success committed.
        """
        ...

    def hold_workflow(self, *, id: str) -> None:
        """Holds the workflow against a concurrent cancel until the transaction ends.

        Run before a running job's success with the jobs its handler added
        is recorded, so that a cancel of the workflow comes wholly before it
        or wholly after it; such holds do not wait for each other.
        """
        ...

    def insert_workflow_jobs(
        self, *, workflow_id: str, jobs: Sequence[WorkflowJob], now: str
    ) -> None:
        """Stores jobs of workflow_id, each pending while its pending_deps is above 0."""
        ...

    def cancel_added_jobs(self, *, ids: Sequence[str], adder: str, now: str) -> int:
        """Cancels the jobs of ids, just added by adder's handler, if adder's cancel was requested.

        Returns how many it cancelled. A job whose cancel was requested
        while it ran adds no job that runs.
        """
        ...

    def hand_over_dependents(self, *, job: str, heir: str, ids: Sequence[str], now: str) -> None:
        """Makes heir a dependency of job's dependents not started, but the jobs of ids.

        Each waits for heir as it waited for job (pending, counting it), and
        one that job fed takes heir's result. ids are the jobs job's handler
        added, heir among them.
        """
        ...

    def create_job_deps(self, *, deps: Sequence[JobDep]) -> None:
        """Records that each edge's job waits for its dep."""
        ...

    def settle_ended(self, *, ids: Sequence[str], now: str) -> None:
        """Settles the dependents of the jobs of ids that ended and belong to a workflow.

        See ``jobtable._engines.dependencies.settle_dependents``: each one's
        end is counted by its dependents, and a failure or cancel cancels
        the dependents that needed it to succeed, transitively.
        """
        ...

    def revive_dependents(self, *, dep: str, now: str) -> list[str]:
        """Puts back to pending the jobs dep's end cancelled; returns their ids."""
        ...

    def stranded_deps(self) -> list[str]:
        """The ended dependencies whose end a pending job has not counted."""
        ...

    def blocking_deps(self, *, job: str) -> list[str]:
        """The dependencies job needs to succeed that ended otherwise."""
        ...

    def forget_dependency(self, *, dep: str) -> None:
        """Before dep is deleted: the jobs that had not counted its end stop counting it.

        Each of them is cancelled by then; it names dep as what cancelled
        it, so that a retry of it is refused.
        """
        ...

    def reopen_dependents(self, *, dep: str, now: str) -> None:
        """Makes the jobs that counted dep's end, not started since, wait again: dep was retried."""
        ...

    def wait_again(self, *, job: str) -> None:
        """Makes the retried job wait again for the dependencies retried since their end counted.

        Its count of dependencies not yet counted is set anew, and it is
        pending again while one remains.
        """
        ...

    def list_dependencies(self, *, job: str) -> Sequence[DependencyRow]:
        """The jobs job depends on, in enqueue order."""
        ...

    def dependency_traces(self, *, job: str) -> list[tuple[str, str]]:
        """The (id, run trace) of each of job's dependencies that stored one, in enqueue order."""
        ...

    def list_dependents(self, *, dep: str) -> Sequence[DependencyRow]:
        """The jobs that depend on dep, in enqueue order (result and run_on_failure unset)."""
        ...

    def job_workflow(self, *, id: str) -> JobWorkflowRow | None:
        """The job's workflow and the dependency that cancelled it; None for an unknown id."""
        ...

    def workflow_jobs(self, *, workflow_id: str) -> Sequence[WorkflowJobRow]:
        """Every job of the workflow, in enqueue order."""
        ...

    def delete_empty_workflows(self, *, before: str, max_workflows: int) -> int:
        """Deletes up to max_workflows workflows created before before that have no job left."""
        ...

    def list_workflows(
        self, *, name: str | None, before: str | None, limit: int
    ) -> Sequence[WorkflowCountRow]:
        """Up to limit workflows, newest first, after the workflow before, each with its counts.

        A row per workflow and status of its jobs, a workflow's rows together.
        """
        ...

    def workflow_edges(self, *, workflow_id: str) -> list[tuple[str, str]]:
        """Every dependency of the workflow's jobs as (dep, job): job waits for dep."""
        ...

    def cancel_workflow_jobs(self, *, workflow_id: str, now: str) -> list[str]:
        """Cancels the workflow's pending and queued jobs; returns their ids."""
        ...

    def request_cancel_workflow(self, *, workflow_id: str, now: str) -> int:
        """Asks the runners holding the workflow's running jobs to cancel them."""
        ...


_Stored = TypeVar("_Stored", str, datetime.datetime, covariant=True)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class _Dep(Protocol):
    @property
    def dep(self) -> str: ...


class _Edge(_Dep, Protocol):
    @property
    def job(self) -> str: ...


class _Trace(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def run_trace(self) -> str | None: ...


class _Dependent(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def status(self) -> str: ...


class _JobWorkflow(Protocol[_Stored]):
    @property
    def workflow_id(self) -> str | None: ...

    @property
    def workflow_name(self) -> str | None: ...

    @property
    def blocked_by(self) -> str | None: ...

    @property
    def status(self) -> str: ...

    @property
    def finished_at(self) -> _Stored | None: ...

    @property
    def deadline_at(self) -> _Stored | None: ...

    @property
    def deadline_done(self) -> object: ...


class WorkflowStatements(Protocol[_Stored]):
    """The statements of queries/workflows.sql that both engines' generated Queriers share.

    _Stored is how the engine's rows hold a time: SQLite's as text,
    PostgreSQL's as datetimes.
    """

    def get_workflow(self, *, id: str) -> _Named | None: ...

    def lock_workflow(self, *, id: str) -> object | None: ...

    def hold_workflow(self, *, id: str) -> object | None: ...

    def mark_deadline_done(self, *, id: str) -> None: ...

    def list_stranded_deps(self) -> Sequence[_Dep]: ...

    def list_blocking_deps(self, *, job: str) -> Sequence[_Dep]: ...

    def forget_dependency(self, *, dep: str | None) -> None: ...

    def reopen_dependencies(self, *, job: str) -> None: ...

    def count_pending_deps(self, *, id: str) -> None: ...

    def list_dependency_traces(self, *, job: str) -> Sequence[_Trace]: ...

    def list_dependents(self, *, dep: str) -> Sequence[_Dependent]: ...

    def get_job_workflow(self, *, id: str) -> _JobWorkflow[_Stored] | None: ...

    def list_workflow_deps(self, *, workflow_id: str | None) -> Sequence[_Edge]: ...

    def list_workflow_jobs(self, *, workflow_id: str | None) -> Sequence[object]: ...

    def list_workflows(
        self, *, name: str | None, before: str | None, max_workflows: int
    ) -> Sequence[object]: ...


class CommonWorkflowQueries(Generic[_Stored]):
    """The seam's workflow methods that both engines run alike, over ``_wf``.

    Each engine's adapter derives from it and sets ``_wf`` to its generated
    workflows Querier; the methods whose statements differ stay with it.
    """

    _wf: WorkflowStatements[_Stored]

    def mark_deadline_done(self, *, id: str) -> None:
        self._wf.mark_deadline_done(id=id)

    def workflow_name(self, *, id: str) -> str | None:
        row = self._wf.get_workflow(id=id)
        return None if row is None else row.name

    def lock_workflow(self, *, id: str) -> bool:
        return self._wf.lock_workflow(id=id) is not None

    def hold_workflow(self, *, id: str) -> None:
        self._wf.hold_workflow(id=id)

    def stranded_deps(self) -> list[str]:
        return [row.dep for row in self._wf.list_stranded_deps()]

    def blocking_deps(self, *, job: str) -> list[str]:
        return [row.dep for row in self._wf.list_blocking_deps(job=job)]

    def forget_dependency(self, *, dep: str) -> None:
        self._wf.forget_dependency(dep=dep)

    def wait_again(self, *, job: str) -> None:
        self._wf.reopen_dependencies(job=job)
        self._wf.count_pending_deps(id=job)

    def dependency_traces(self, *, job: str) -> list[tuple[str, str]]:
        rows = self._wf.list_dependency_traces(job=job)
        return [(r.id, r.run_trace) for r in rows if r.run_trace is not None]

    def list_dependents(self, *, dep: str) -> Sequence[DependencyRow]:
        return [
            DependencyRow(r.id, r.kind, r.status, None, False)
            for r in self._wf.list_dependents(dep=dep)
        ]

    def job_workflow(self, *, id: str) -> JobWorkflowRow | None:
        row = self._wf.get_job_workflow(id=id)
        if row is None:
            return None
        past = past_deadline(row.status, row.finished_at, row.deadline_at, row.deadline_done)
        return JobWorkflowRow(row.workflow_id, row.workflow_name, row.blocked_by, past)

    def workflow_edges(self, *, workflow_id: str) -> list[tuple[str, str]]:
        return [(r.dep, r.job) for r in self._wf.list_workflow_deps(workflow_id=workflow_id)]

    def workflow_jobs(self, *, workflow_id: str) -> Sequence[WorkflowJobRow]:
        rows = self._wf.list_workflow_jobs(workflow_id=workflow_id)
        return [stored(WorkflowJobRow, r) for r in rows]

    def list_workflows(
        self, *, name: str | None, before: str | None, limit: int
    ) -> Sequence[WorkflowCountRow]:
        rows = self._wf.list_workflows(name=name, before=before, max_workflows=limit)
        return [stored(WorkflowCountRow, r) for r in rows]
