"""The store's reads of workflows: the listing, a page at a time, and one workflow's graph.

The listing (ListWorkflows in queries/workflows.sql) takes a page of the
workflows table, newest first, and counts each listed workflow's jobs by
status through the jobs_workflow index; the state each workflow is in
follows from its counts. The read of one workflow takes its name, its jobs
(in enqueue order, through the jobs_workflow index) and its dependency
edges in one read transaction, so the graph it returns is one consistent
state. ``WorkflowMethods`` is the group of Store methods that run them.
"""

import dataclasses
import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from jobtable._engines.base import Engine, Queries
from jobtable._errors import JobNotFound
from jobtable._job import Status
from jobtable._values import checked_id, unstorable

WorkflowState = Literal["running", "finished", "failed", "cancelled"]
"""What a workflow as a whole is doing, from the statuses of its jobs; see ``WorkflowSummary``."""

MAX_LISTED = 1000
"""The most workflows one call of ``Store.workflows`` returns."""

_UNENDED = (Status.PENDING, Status.QUEUED, Status.RUNNING)


def state_of(counts: dict[Status, int]) -> WorkflowState:
    """The state of a workflow whose jobs are counted by status in counts."""
    if any(counts.get(status) for status in _UNENDED):
        return "running"
    if counts.get(Status.FAILED):
        return "failed"
    if counts.get(Status.CANCELLED):
        return "cancelled"
    return "finished"


class WorkflowSummary(BaseModel):
    """A workflow as ``Store.workflows`` lists it: its id, name, creation time and jobs' counts.

    ``counts`` holds every status, 0 included. ``state`` is ``running``
    while any job is pending, queued or running; once every job ended it is
    ``failed`` if any failed, else ``cancelled`` if any was cancelled, else
    ``finished`` (every job succeeded, or every job was deleted: pruning
    deletes the workflow itself with its last job).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    created_at: datetime.datetime
    counts: dict[Status, int]
    state: WorkflowState


def _text(label: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"workflows: {label} is {type(value).__name__}, want str or None")
    if why := unstorable(value):
        raise ValueError(f"workflows: {label} {value!r}: {why}")
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class ListWorkflows:
    """The read of a page of workflows, newest first, each with its jobs counted by status."""

    name: str | None
    before: str | None
    limit: int

    @classmethod
    def checked(cls, name: str | None, before: str | None, limit: int) -> "ListWorkflows":
        """The read for these arguments; TypeError or ValueError naming a bad one."""
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"workflows: limit is {type(limit).__name__}, want int")
        if not 1 <= limit <= MAX_LISTED:
            raise ValueError(f"workflows: limit must be 1 to {MAX_LISTED}, got {limit}")
        return cls(_text("name", name), _text("before", before), limit)

    def __call__(self, q: Queries) -> list[WorkflowSummary]:
        rows = q.list_workflows(name=self.name, before=self.before, limit=self.limit)
        found: dict[str, tuple[str, datetime.datetime, dict[Status, int]]] = {}
        for row in rows:
            _, _, counts = found.setdefault(
                row.id, (row.name, row.created_at, {status: 0 for status in Status})
            )
            if row.status is not None:
                counts[Status(row.status)] += row.jobs
        return [
            WorkflowSummary(
                id=workflow_id,
                name=name,
                created_at=created_at,
                counts=counts,
                state=state_of(counts),
            )
            for workflow_id, (name, created_at, counts) in found.items()
        ]


class WorkflowNode(BaseModel):
    """A job of a workflow as ``Store.workflow`` reads it.

    ``dependencies`` are the ids of the jobs of the workflow it waits for, in
    enqueue order. ``created_at`` is when it was enqueued, ``started_at``
    when its last attempt began and ``finished_at`` when it ended (each None
    until then, and for a graph read without times).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    status: Status
    dependencies: list[str] = []
    created_at: datetime.datetime | None = None
    started_at: datetime.datetime | None = None
    finished_at: datetime.datetime | None = None


class WorkflowGraph(BaseModel):
    """A workflow as ``Store.workflow`` reads it: its id, name and every job, in enqueue order.

    A job a prune or delete removed is no longer in ``jobs``, and the edges
    to it are gone with it. ``waiting`` is True while the workflow waits for
    a slot of its concurrency limit (``Workflow(..., concurrency=)``): its
    jobs are pending until it is admitted.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    jobs: list[WorkflowNode]
    waiting: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class ReadWorkflow:
    """The read of a workflow's graph; raises JobNotFound for an unknown id."""

    workflow_id: str

    def __call__(self, q: Queries) -> WorkflowGraph:
        checked_id(self.workflow_id, "workflow")
        name = None if unstorable(self.workflow_id) else q.workflow_name(id=self.workflow_id)
        if name is None:
            raise JobNotFound(f"workflow {self.workflow_id!r} not found")
        rows = q.workflow_jobs(workflow_id=self.workflow_id)
        order = {row.id: n for n, row in enumerate(rows)}
        deps: dict[str, list[str]] = {}
        for dep, job in q.workflow_edges(workflow_id=self.workflow_id):
            deps.setdefault(job, []).append(dep)
        jobs = [
            WorkflowNode(
                id=row.id,
                kind=row.kind,
                status=Status(row.status),
                dependencies=sorted(deps.get(row.id, []), key=lambda dep: order.get(dep, -1)),
                created_at=row.created_at,
                started_at=row.started_at,
                finished_at=row.finished_at,
            )
            for row in rows
        ]
        waiting = q.workflow_slot(id=self.workflow_id) == "waiting"
        return WorkflowGraph(id=self.workflow_id, name=name, jobs=jobs, waiting=waiting)


class WorkflowMethods:
    """The operations of ``Store`` that read workflows (a graph, a listing); Store sets engine."""

    engine: Engine

    def workflow(self, workflow_id: str) -> WorkflowGraph:
        """The workflow's name and every job of it with its kind, status and dependencies.

        Read in one transaction.

        Args:
            workflow_id: The id ``Workflow.enqueue`` returned.

        Returns:
            The workflow's graph.

        Raises:
            JobNotFound: No workflow has the id.
            TypeError: workflow_id is not a str.
        """
        return self.engine.read(ReadWorkflow(workflow_id))

    async def aworkflow(self, workflow_id: str) -> WorkflowGraph:
        """The async form of workflow."""
        return await self.engine.aread(ReadWorkflow(workflow_id))

    def workflows(
        self, *, name: str | None = None, before: str | None = None, limit: int = 50
    ) -> list[WorkflowSummary]:
        """Up to limit workflows, newest first, each with its jobs counted by status.

        Read in one transaction.

        Args:
            name: Only the workflows of this name.
            before: The id of the last workflow of the previous page: the page goes
                on after it (an id that is no workflow's gives an empty list).
            limit: At most this many, 1 to 1000.

        Returns:
            The workflows' summaries, newest first.

        Raises:
            TypeError: An argument of the wrong type, named.
            ValueError: A bad argument, named (a limit outside 1 to 1000).
        """
        return self.engine.read(ListWorkflows.checked(name, before, limit))

    async def aworkflows(
        self, *, name: str | None = None, before: str | None = None, limit: int = 50
    ) -> list[WorkflowSummary]:
        """The async form of workflows."""
        return await self.engine.aread(ListWorkflows.checked(name, before, limit))
