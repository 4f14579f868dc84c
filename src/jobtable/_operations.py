"""The store's operations on jobs: each a function of ``Queries`` run in one transaction.

Enqueue, read, list and cancel: what an enqueuer, a reader and the operator
tools hand an engine. Each is a small object holding its parameters, so that
a write can be retried, logged or batched as a value; its time is the
``now`` text its caller took from the store's clock as it built it. The
runner's own operations (claims, outcomes, heartbeats) are in
``jobtable._runner.run_operations``.
"""

import dataclasses
from collections.abc import Sequence

from jobtable._engines.base import Insert, JobInserts, Queries, Statement
from jobtable._engines.dependencies import blocking_reasons, settle_dependents
from jobtable._engines.rows import CountRow, JobRow, NewJob, RecordRow
from jobtable._engines.step_queries import StepRow
from jobtable._errors import JobNotFound
from jobtable._flow import WaitReason, wait_reason
from jobtable._job import CancelResult, LinkedJob, Status, WorkflowLinks
from jobtable._values import checked_id, unstorable


class GetJob:
    """The read of one job; raises JobNotFound when no job has the id.

    Raises TypeError at once for an id that is not a str. A str that no
    engine can store as text (a NUL, a lone surrogate) is no job's id: it is
    JobNotFound without a query, so every engine answers alike.
    """

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        self.job_id = checked_id(job_id)

    def __call__(self, q: Queries) -> JobRow:
        row = None if unstorable(self.job_id) else q.get_job(id=self.job_id)
        if row is None:
            raise JobNotFound(f"job {self.job_id!r} not found")
        return row


class GetJobRecord:
    """The read of one job's whole record; raises JobNotFound when no job has the id.

    Ids are checked as GetJob checks them, so every engine answers alike.
    """

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        self.job_id = checked_id(job_id)

    def __call__(self, q: Queries) -> RecordRow:
        row = None if unstorable(self.job_id) else q.get_job_record(id=self.job_id)
        if row is None:
            raise JobNotFound(f"job {self.job_id!r} not found")
        return row


@dataclasses.dataclass(frozen=True, slots=True)
class InspectJob:
    """The read of one job's record, steps and workflow links, and, when queued, why it waits."""

    job_id: str
    now: str

    def __call__(
        self, q: Queries
    ) -> tuple[RecordRow, WaitReason | None, Sequence[StepRow], WorkflowLinks | None]:
        row = GetJobRecord(self.job_id)(q)
        steps = q.list_job_steps(job_id=self.job_id)
        links = workflow_links(q, self.job_id)
        if row.status != "queued":
            return row, None, steps, links
        facts = q.get_wait_facts(id=self.job_id, now=self.now)
        return row, wait_reason(facts), steps, links


def workflow_links(q: Queries, job_id: str) -> WorkflowLinks | None:
    """The job's workflow, dependencies and dependents; None for a job of no workflow."""
    found = q.job_workflow(id=job_id)
    if found is None or found.workflow_id is None:
        return None
    deps = q.list_dependencies(job=job_id)
    status = {d.id: d.status for d in deps}
    reason = None
    if found.blocked_by is not None:
        # Its edge went with it: a dependency not listed was deleted.
        reason = f"dependency {found.blocked_by} {status.get(found.blocked_by, 'deleted')}"
    elif found.past_deadline:
        reason = DEADLINE_PASSED
    return WorkflowLinks(
        id=found.workflow_id,
        name=found.workflow_name or "",
        dependencies=[LinkedJob(id=d.id, kind=d.kind, status=Status(d.status)) for d in deps],
        dependents=[
            LinkedJob(id=d.id, kind=d.kind, status=Status(d.status))
            for d in q.list_dependents(dep=job_id)
        ],
        cancelled_because=reason,
        blocked_by=blocking_reasons(deps, found.blocked_by),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ListJobs:
    """The read of a page of job records, newest first, below seq before."""

    before: int
    status: str | None
    kind: str | None
    queue: str | None
    limit: int
    tag: str | None = None

    def __call__(self, q: Queries) -> Sequence[RecordRow]:
        return q.list_jobs(
            before=self.before,
            status=self.status,
            kind=self.kind,
            queue=self.queue,
            tag=self.tag,
            max_jobs=self.limit,
        )


def count_jobs(q: Queries) -> Sequence[CountRow]:
    """The read of how many jobs each queue has in each status."""
    return q.count_jobs()


class CreateJobs(Insert[None]):
    """The write that stores jobs of one kind, all queued, in one transaction."""

    __slots__ = ("jobs", "kind", "now")

    def __init__(self, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        self.kind = kind
        self.jobs = jobs
        self.now = now

    def insert(self, q: JobInserts) -> None:
        if self.jobs:
            q.insert_jobs(kind=self.kind, jobs=self.jobs, now=self.now)


def lock_job(q: Queries, job_id: str) -> Status:
    """The status of the job with id, which no other write can change until the transaction ends.

    A write that acts on a job's status reads it here first, so that its
    statements act on the status it read: on PostgreSQL each statement of a
    transaction sees the table anew, and the job could change between them.
    Raises JobNotFound when no job has the id (or it cannot be stored), and
    TypeError for an id that is not a str.
    """
    checked_id(job_id)
    status = None if unstorable(job_id) else q.lock_job(id=job_id)
    if status is None:
        raise JobNotFound(f"job {job_id!r} not found")
    return Status(status)


@dataclasses.dataclass(frozen=True, slots=True)
class CancelJob:
    """The write that cancels a queued job, or asks the runner of a running one to cancel it.

    It acts on one status of the job: the one ``lock_job`` read, which no
    claim or outcome can change before it commits.
    """

    job_id: str
    now: str

    def __call__(self, q: Queries) -> CancelResult:
        status = lock_job(q, self.job_id)
        if status in (Status.QUEUED, Status.PENDING):
            q.cancel_queued_job(now=self.now, id=self.job_id)
            settle_dependents(q, self.job_id, self.now)
            return CancelResult.CANCELLED
        if status is Status.RUNNING:
            q.request_cancel(now=self.now, id=self.job_id)
            q.notify_cancel()
            return CancelResult.REQUESTED
        return CancelResult.FINISHED


class CreateJob(CreateJobs, Statement[None]):
    """CreateJobs of exactly one job: one INSERT, which may commit without BEGIN and COMMIT.

    On PostgreSQL that saves the two round trips a lone enqueue would
    otherwise spend on BEGIN and COMMIT.
    """

    __slots__ = ()


def create_jobs(kind: str, jobs: Sequence[NewJob], now: str) -> CreateJobs:
    """The write that stores jobs as queued jobs of kind."""
    return CreateJob(kind, jobs, now) if len(jobs) == 1 else CreateJobs(kind, jobs, now)


@dataclasses.dataclass(frozen=True, slots=True)
class CancelWorkflow:
    """The write that cancels every unfinished job of a workflow; see ``Store.cancel_workflow``.

    It holds the workflow first (``lock_workflow``), so a running job's
    success that adds jobs to the workflow never interleaves with it: either
    that success committed first, and the cancel finds the added jobs queued
    or pending, or it waits until the cancel committed, and then sees its
    job's cancel request, which stores what it added cancelled.
    """

    workflow_id: str
    now: str

    def __call__(self, q: Queries) -> int:
        checked_id(self.workflow_id, "workflow")
        if unstorable(self.workflow_id) or not q.lock_workflow(id=self.workflow_id):
            raise JobNotFound(f"workflow {self.workflow_id!r} not found")
        cancelled = q.cancel_workflow_jobs(workflow_id=self.workflow_id, now=self.now)
        # Each cancelled job counts as ended for its dependents that opted in
        # with on_failure="run": a retry of one of them must not wait for it.
        for job_id in cancelled:
            settle_dependents(q, job_id, self.now)
        if q.request_cancel_workflow(workflow_id=self.workflow_id, now=self.now):
            q.notify_cancel()
        return len(cancelled)


DEADLINE_PASSED = "workflow deadline passed"
"""What ``cancelled_because`` says of a job its workflow's deadline cancelled."""

OVERDUE_BATCH = 100
"""How many workflows whose deadline passed one maintenance round cancels, at most."""


def cancel_overdue_workflows(q: Queries, now: str) -> int:
    """Cancels each workflow whose deadline passed by now, as ``Store.cancel_workflow`` does.

    Up to OVERDUE_BATCH of them, earliest deadline first; each is marked
    done, so its deadline never acts again (a job retried afterwards runs).
    Run by the runners' maintenance. Returns how many workflows it acted on.
    """
    overdue = q.overdue_workflows(now=now, max_workflows=OVERDUE_BATCH)
    for workflow_id in overdue:
        CancelWorkflow(workflow_id, now)(q)
        q.mark_deadline_done(id=workflow_id)
    return len(overdue)
