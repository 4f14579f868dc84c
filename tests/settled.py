"""The settle invariant over a store's own tables, on either engine: no job waits for nothing.

``unsettled(target)`` reads the jobs and job_deps tables straight from the
database (the target ``Store.open`` took: a SQLite path, or a PostgreSQL URL
naming the test's schema) and returns every breach it finds, as sentences;
``assert_settled(target)`` fails with them. A test calls it after each action
it takes: every change to a job must have applied all its consequences to
the jobs of its workflow in its own transaction.

What it checks, of every job:

- a job of no workflow is never pending;
- a job's count of dependencies not yet counted (pending_deps) is the
  number of its edges whose end is not counted (job_deps.done), and one
  more while its workflow waits for a slot (a concurrency limit);
- a pending job waits for something: it has at least one such edge, or
  its workflow waits for a slot, and every such edge's dependency has not
  ended (an ended one must have been counted, or have cancelled it);
- a queued, running, succeeded or failed job has no such edge: it became
  ready only once each dependency was counted;
- every edge joins two jobs that exist.
"""

import contextlib
import sqlite3
from typing import NamedTuple

UNENDED = frozenset({"queued", "pending", "running"})

_JOBS = "SELECT id, status, workflow_id, pending_deps FROM jobs"
_EDGES = "SELECT dep, job, CAST(done AS INTEGER) FROM job_deps"
_WAITING = "SELECT id FROM workflows WHERE slot = 'waiting'"


class _Job(NamedTuple):
    status: str
    workflow_id: str | None
    pending_deps: int


_Rows = list[tuple[object, ...]]


def _rows(target: str) -> tuple[_Rows, _Rows, set[str]]:
    """Every job's and edge's row, and the workflows waiting for a slot, in one transaction."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            waiting = {str(r[0]) for r in conn.execute(_WAITING).fetchall()}
            return conn.execute(_JOBS).fetchall(), conn.execute(_EDGES).fetchall(), waiting
    with contextlib.closing(sqlite3.connect(target)) as lite:
        lite.execute("BEGIN")
        waiting = {str(r[0]) for r in lite.execute(_WAITING).fetchall()}
        return lite.execute(_JOBS).fetchall(), lite.execute(_EDGES).fetchall(), waiting


def unsettled(target: str) -> list[str]:
    """Every breach of the settle invariant in the store at target; empty when there is none."""
    job_rows, edge_rows, slot_waits = _rows(target)
    jobs = {
        str(r[0]): _Job(str(r[1]), None if r[2] is None else str(r[2]), int(str(r[3])))
        for r in job_rows
    }
    waiting: dict[str, list[str]] = {}  # job -> its dependencies whose end is not counted
    breaches = []
    for dep, job, done in edge_rows:
        if str(dep) not in jobs or str(job) not in jobs:
            breaches.append(f"edge {dep} -> {job} joins a job that does not exist")
        elif not int(str(done)):
            waiting.setdefault(str(job), []).append(str(dep))
    for job_id, job in jobs.items():
        deps = waiting.get(job_id, [])
        if job.workflow_id is None:
            if job.status == "pending":
                breaches.append(f"job {job_id} of no workflow is pending")
            continue
        slot = int(job.workflow_id in slot_waits)
        if job.pending_deps != len(deps) + slot:
            breaches.append(
                f"job {job_id} ({job.status}) counts {job.pending_deps} dependencies"
                f" not yet counted, but has {len(deps)}: {deps}"
                + (" and its workflow's slot" if slot else "")
            )
        if job.status == "pending":
            ended = {d: jobs[d].status for d in deps if d in jobs and jobs[d].status not in UNENDED}
            if not deps and not slot:
                breaches.append(f"job {job_id} is pending with nothing left to wait for")
            elif ended:
                breaches.append(f"pending job {job_id} waits for dependencies that ended: {ended}")
        elif job.status != "cancelled" and deps:
            breaches.append(f"job {job_id} is {job.status} while it waits for {deps}")
    return breaches


def assert_settled(target: str) -> None:
    """Fails naming every breach of the settle invariant in the store at target."""
    breaches = unsettled(target)
    assert not breaches, "the store is not settled:\n" + "\n".join(breaches)
