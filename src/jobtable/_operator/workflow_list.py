"""The store's listing of workflows: newest first, a keyset page at a time, with their counts.

One read (ListWorkflows in queries/workflows.sql) takes a page of the
workflows table, newest first, and counts each listed workflow's jobs by
status through the jobs_workflow index; the state each workflow is in
follows from its counts.
"""

import dataclasses
import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from jobtable._engines.base import Queries
from jobtable._job import Status
from jobtable._values import unstorable

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
        found: dict[str, tuple[str, str, dict[Status, int]]] = {}
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
                created_at=datetime.datetime.fromisoformat(created_at),
                counts=counts,
                state=state_of(counts),
            )
            for workflow_id, (name, created_at, counts) in found.items()
        ]
