"""What a job's end does to the jobs that depend on it, inside the transaction that records it.

Every write that ends a job of a workflow (a finish, a cancel, a cancel of a
workflow) calls ``settle_dependents`` in its own transaction, and a retry
calls ``revive_dependents``: no crash between a dependency's end and its
dependents' can leave a dependent waiting, since both commit together or
not at all. Jobs of no workflow never get here.
"""

from jobtable._engines.workflow_queries import WorkflowQueries

_ENDED = frozenset({"succeeded", "failed", "cancelled"})


def settle_dependents(q: WorkflowQueries, job_id: str, now: str) -> None:
    """Settles the dependents of job_id, which just ended (an unended job is left alone).

    Succeeded: its result becomes the payload of the jobs it feeds, and each
    dependent counts it; a pending job whose count reaches 0 is queued.
    Failed or cancelled: the dependents that opted in count it, and the
    others are cancelled with job_id as the reason, their own dependents in
    turn, transitively.
    """
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
        for dep in q.blocking_deps(job=job):
            settle_dependents(q, dep, now)


def settle_stranded(q: WorkflowQueries, now: str) -> None:
    """Settles the dependents of every ended job whose end a pending job has not counted.

    For the writes that end jobs in bulk, by statements that know nothing
    of workflows: an interrupt that fails jobs, a bulk cancel.
    """
    for dep in q.stranded_deps():
        settle_dependents(q, dep, now)
