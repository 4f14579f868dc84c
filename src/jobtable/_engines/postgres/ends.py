"""The notifications that jobs ended or were released, for the writes outside an outcome statement.

A base of the engine's ``Queries`` adapters calls them after a write that
ended jobs (an interrupt, a bulk cancel, a workflow's cancel, a bulk
delete), so that processes waiting for those jobs wake at its commit
instead of at their next poll, and after a write that may release a held
job (a cancel that frees a continuing sequence, an interrupt that frees a
slot or puts a job back in its queue), so that idle runners look again at
its commit. The outcome statements (FinishAndClaimJobs, FinishWorkflowJobs,
CancelQueuedJob, SettleDependents, DeleteFinishedJobs) notify by themselves
what they end; FinishAndClaimJobs and FinishWorkflowJobs what they release.
"""

from collections.abc import Sequence

import psycopg
from psycopg.rows import TupleRow

from jobtable.db.postgres import admin, jobs


def notify_ended(conn: psycopg.Connection[TupleRow], ids: Sequence[str] = ()) -> None:
    """Tells the waiting processes, at commit, that the jobs of ids ended (NotifyJobsEnded).

    With no ids, it tells them that jobs ended without naming them: each
    then checks every job it waits for. One notification however many ids.
    """
    jobs.Querier(conn).notify_jobs_ended(ids=list(ids))


def notify_released(conn: psycopg.Connection[TupleRow]) -> None:
    """Wakes every idle runner of the schema at commit (WakeRunners): a held job may be ready.

    For the writes that may release a held job outside the outcome
    statements: cancels, interrupts. They are rare, and do not know which
    queue holds the job they release (the next of a sequence may be in
    another), so every runner looks again, as after an enqueue.
    """
    admin.Querier(conn).wake_runners()
