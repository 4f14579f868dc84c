"""What a job's end does to the jobs that depend on it, inside the transaction that records it.

Every write that ends a job of a workflow (a finish, a cancel, a cancel of a
workflow) settles its dependents in its own transaction, and a retry
revives them: no crash between a dependency's end and its dependents' can
leave a dependent waiting, since both commit together or not at all. Jobs
of no workflow never get here. An engine settles as it can
(``WorkflowQueries.settle_ended``): PostgreSQL in one statement, SQLite
one step at a time (``settle_steps``), each step a statement of the same
transaction.
"""

from collections.abc import Sequence
from typing import Protocol

from jobtable._engines.workflow_queries import DependencyRow, WorkflowQueries

_ENDED = frozenset({"succeeded", "failed", "cancelled"})
_BLOCKING = frozenset({"failed", "cancelled"})


class SettleSteps(Protocol):
    """The statements ``settle_steps`` settles with: an engine that settles a step at a time."""

    def dep_state(self, *, id: str) -> tuple[str, str | None] | None:
        """The job's status and workflow id, None for an unknown id."""
        ...

    def feed_dependents(self, *, dep: str) -> int:
        """Copies dep's result into the payload of the pending jobs it feeds."""
        ...

    def release_dependents(self, *, dep: str, succeeded: bool, now: str) -> int:
        """Counts dep's end for its dependents; a pending one at 0 becomes queued."""
        ...

    def mark_deps_done(self, *, dep: str, succeeded: bool) -> None:
        """Records that dep's end was counted."""
        ...

    def cancel_dependents(self, *, dep: str, now: str) -> list[str]:
        """Cancels the pending jobs that needed dep to succeed; returns their ids."""
        ...

    def notify_ready(self) -> None:
        """Wakes idle runners for jobs that became ready."""
        ...


def settle_dependents(q: WorkflowQueries, job_id: str, now: str) -> None:
    """Settles the dependents of job_id, which just ended (an unended job is left alone).

    Succeeded: its result becomes the payload of the jobs it feeds, and each
    dependent counts it; a pending job whose count reaches 0 is queued.
    Failed or cancelled: the dependents that opted in count it, and the
    others are cancelled with job_id as the reason, their own dependents in
    turn, transitively.
    """
    q.settle_ended(ids=[job_id], now=now)


def settle_steps(q: SettleSteps, job_id: str, now: str) -> None:
    """Settles the dependents of job_id as ``settle_dependents`` says, a statement a step."""
    state = q.dep_state(id=job_id)
    if state is None or state[0] not in _ENDED or state[1] is None:
        return  # a job of no workflow has no dependents
    todo = [(job_id, state[0] == "succeeded")]
    released = 0
    while todo:
        dep, succeeded = todo.pop()
        if succeeded:
            q.feed_dependents(dep=dep)
        released += q.release_dependents(dep=dep, succeeded=succeeded, now=now)
        if not succeeded:
            todo += [(job, False) for job in q.cancel_dependents(dep=dep, now=now)]
        q.mark_deps_done(dep=dep, succeeded=succeeded)
    if released:
        q.notify_ready()


def revive_dependents(q: WorkflowQueries, job_id: str, now: str) -> None:
    """Puts back to pending the jobs job_id's end cancelled, transitively: job_id was retried.

    A revived job will end anew, so the jobs that counted its cancel, and
    have not started since (a clean-up after it), wait for its new end. A
    revived job that another ended dependency still blocks is cancelled
    again, with that one as the reason.
    """
    todo, revived = [job_id], []
    while todo:
        ids = q.revive_dependents(dep=todo.pop(), now=now)
        revived += ids
        todo += ids
    for job in revived:
        q.reopen_dependents(dep=job, now=now)
    for job in revived:
        settle_blockers(q, job, now)


def settle_blockers(q: WorkflowQueries, job_id: str, now: str) -> None:
    """Settles again the ended dependencies job_id needed to succeed: they cancel it anew."""
    for dep in q.blocking_deps(job=job_id):
        settle_dependents(q, dep, now)


def retry_blockers(q: WorkflowQueries, job_id: str) -> list[str]:
    """Why job_id cannot run again: the dependencies it needs that ended otherwise than succeeding.

    See ``blocking_reasons``. Empty for a job of no workflow, and for one
    that nothing blocks. A retry of a blocked job is refused: the
    dependency's retry is what brings it back.
    """
    found = q.job_workflow(id=job_id)
    if found is None or found.workflow_id is None:
        return []
    return blocking_reasons(q.list_dependencies(job=job_id), found.blocked_by)


def blocking_reasons(deps: Sequence[DependencyRow], blocked_by: str | None) -> list[str]:
    """What blocks a job of a workflow with deps and blocked_by: its dependencies that ended badly.

    Each dependency it needs to succeed (not opted in with
    ``on_failure="run"``) that failed or was cancelled, as "dependency <id>
    failed" (or cancelled), counted or not: one that succeeded and was
    retried since needs its new end too. And "dependency <id> deleted" for
    the one whose delete cancelled it for good (its edge went with it, see
    ``forget_deleted``).
    """
    reasons = [
        f"dependency {dep.id} {dep.status}"
        for dep in deps
        if not dep.run_on_failure and dep.status in _BLOCKING
    ]
    if blocked_by is not None and all(dep.id != blocked_by for dep in deps):
        reasons.append(f"dependency {blocked_by} deleted")
    return reasons


def forget_deleted(q: WorkflowQueries, job_id: str) -> None:
    """Makes the jobs that need job_id stop waiting for it: it is deleted next, in this transaction.

    Its end must be settled first (an unended job is cancelled, and its
    dependents settled). Each job that had not counted its end then needs
    a job that can no longer end: it is cancelled, names job_id as the
    reason, and its count of dependencies drops the edge that goes with
    job_id, so no job is left pending, or counting, for a job that is gone.
    """
    q.forget_dependency(dep=job_id)


def settle_stranded(q: WorkflowQueries, now: str) -> None:
    """Settles the dependents of every ended job whose end a pending job has not counted.

    For the writes that end jobs in bulk, by statements that know nothing
    of workflows: an interrupt that fails jobs, a bulk cancel.
    """
    for dep in q.stranded_deps():
        settle_dependents(q, dep, now)
