"""The notification that jobs ended, for the writes that end them outside an outcome statement.

A base of the engine's ``Queries`` adapters calls it after a write that
ended jobs (an interrupt, a bulk cancel, a workflow's cancel, a bulk
delete), so that processes waiting for those jobs wake at its commit
instead of at their next poll. The outcome statements (FinishAndClaimJobs,
FinishWorkflowJobs, CancelQueuedJob, SettleDependents) notify by themselves.
"""

from collections.abc import Sequence

import psycopg
from psycopg.rows import TupleRow

from jobtable.db.postgres import jobs


def notify_ended(conn: psycopg.Connection[TupleRow], ids: Sequence[str] = ()) -> None:
    """Tells the waiting processes, at commit, that the jobs of ids ended (NotifyJobsEnded).

    With no ids, it tells them that jobs ended without naming them: each
    then checks every job it waits for. One notification however many ids.
    """
    jobs.Querier(conn).notify_jobs_ended(ids=list(ids))
