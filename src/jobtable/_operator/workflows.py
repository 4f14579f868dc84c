"""The store's read of a whole workflow: its jobs and their dependencies, for a graph.

One read transaction takes the workflow's name, its jobs (in enqueue order,
through the jobs_workflow index) and its dependency edges
(queries/workflows.sql), so the graph it returns is one consistent state.
"""

import dataclasses
import datetime

from pydantic import BaseModel, ConfigDict

from jobtable._engines.base import Engine, Queries
from jobtable._errors import JobNotFound
from jobtable._job import Status
from jobtable._operator.workflow_list import ListWorkflows, WorkflowSummary
from jobtable._values import checked_id, unstorable


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


def _moment(text: str | None) -> datetime.datetime | None:
    return None if text is None else datetime.datetime.fromisoformat(text)


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
                created_at=_moment(row.created_at or None),
                started_at=_moment(row.started_at),
                finished_at=_moment(row.finished_at),
            )
            for row in rows
        ]
        waiting = q.workflow_slot(id=self.workflow_id) == "waiting"
        return WorkflowGraph(id=self.workflow_id, name=name, jobs=jobs, waiting=waiting)


class WorkflowOperations:
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
