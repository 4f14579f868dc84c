"""Invariant checkers over a store's own tables, on either engine, for any test to call.

Each checker reads the database at target (the target ``Store.open``
took: a SQLite path, or a PostgreSQL URL naming the test's schema) and
returns every breach it finds, as sentences; empty means the invariant
holds. ``started`` names the jobs a claim has just started: the bounds a
claim must respect (limits, dependencies, a sequence's order) hold at a
start, not after an operator lowers a limit or retries an earlier job.
"""

import contextlib
import dataclasses
import sqlite3
from collections.abc import Iterable, Sequence

from settled import unsettled

_JOBS = (
    "SELECT id, seq, queue, status, partition_key, sequence_key,"
    " CAST(sequence_blocks AS INTEGER) FROM jobs"
)
_EDGES = "SELECT dep, job, CAST(run_on_failure AS INTEGER) FROM job_deps"
_QUEUES = (
    "SELECT name, concurrency, partition_limit, rate_limit, rate_period,"
    " CAST(rate_per_key AS INTEGER) FROM queues"
)
_STARTS_SQLITE = (
    "SELECT partition_key FROM queue_starts WHERE queue = ? AND started_at > "
    "(SELECT max(started_at) FROM queue_starts) - ?"
)
_STARTS_POSTGRES = (
    "SELECT partition_key FROM queue_starts WHERE queue = %s AND started_at > "
    "(SELECT max(started_at) FROM queue_starts) - make_interval(secs => %s)"
)
ENDED = frozenset({"succeeded", "failed", "cancelled"})


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Every job, edge and queue's limits, and the recent starts of each limited queue."""

    jobs: dict[str, tuple[object, ...]]
    edges: list[tuple[object, ...]]
    queues: dict[str, tuple[object, ...]]
    starts: dict[str, list[str | None]]


def _read(conn: object, postgres: bool) -> Snapshot:
    run = conn.execute  # type: ignore[attr-defined]
    jobs = {str(r[0]): tuple(r) for r in run(_JOBS).fetchall()}
    edges = [tuple(r) for r in run(_EDGES).fetchall()]
    queues = {str(r[0]): tuple(r) for r in run(_QUEUES).fetchall()}
    starts = {}
    for name, row in queues.items():
        if row[3] is not None:
            query = _STARTS_POSTGRES if postgres else _STARTS_SQLITE
            found = run(query, (name, float(str(row[4])))).fetchall()
            starts[name] = [None if r[0] is None else str(r[0]) for r in found]
    return Snapshot(jobs, edges, queues, starts)


def snapshot(target: str) -> Snapshot:
    """The store's jobs, edges, limits and recent starts, read in one transaction."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return _read(conn, True)
    with contextlib.closing(sqlite3.connect(target)) as lite:
        lite.execute("BEGIN")
        return _read(lite, False)


def over_limits(target: str, started: Iterable[str]) -> list[str]:
    """Each limit (concurrency, partition, rate) of a started job's queue that its start broke."""
    snap = snapshot(target)
    breaches = []
    for job_id in started:
        _, _, queue, _, key, _, _ = snap.jobs[job_id]
        limits = snap.queues.get(str(queue))
        if limits is None:
            continue
        _, concurrency, partition, rate, _, per_key = limits
        running = [j for j in snap.jobs.values() if j[3] == "running" and j[2] == queue]
        if concurrency is not None and len(running) > int(str(concurrency)):
            breaches.append(f"concurrency: {len(running)} running in {queue}, limit {concurrency}")
        in_key = [j for j in running if j[4] == key]
        if partition is not None and len(in_key) > int(str(partition)):
            breaches.append(f"partition: {len(in_key)} running of key {key!r}, limit {partition}")
        recent = snap.starts.get(str(queue), [])
        if per_key:
            recent = [k for k in recent if k == key]
        if rate is not None and len(recent) > int(str(rate)):
            breaches.append(f"rate: {len(recent)} starts in one period in {queue}, limit {rate}")
    return breaches


def early_starts(target: str, started: Iterable[str]) -> list[str]:
    """Each started job with a dependency it needed not succeeded (or not ended, if opted in)."""
    snap = snapshot(target)
    chosen = set(started)
    breaches = []
    for dep, job, opted in snap.edges:
        if str(job) not in chosen or str(dep) not in snap.jobs:
            continue
        if snap.jobs[str(job)][3] != "running":
            continue
        status = snap.jobs[str(dep)][3]
        if status != "succeeded" and not (int(str(opted)) and status in ENDED):
            breaches.append(f"dependencies: {job} started while its dependency {dep} was {status}")
    return breaches


def out_of_sequence(target: str, started: Iterable[str]) -> list[str]:
    """Each started job of a sequence with an earlier job of it unended, or ended and blocking."""
    snap = snapshot(target)
    breaches = []
    for job_id in started:
        _, seq, _, own_status, _, key, _ = snap.jobs[job_id]
        if key is None or own_status != "running":
            continue
        for other_id, (_, other_seq, _, status, _, other_key, blocks) in snap.jobs.items():
            if other_key != key or int(str(other_seq)) >= int(str(seq)):
                continue
            if status in ("queued", "pending", "running") or (status != "succeeded" and blocks):
                breaches.append(f"sequence: {job_id} started while {other_id} was {status}")
    return breaches


def two_running_in_a_sequence(target: str) -> list[str]:
    """Each sequence with more than one job running."""
    snap = snapshot(target)
    running: dict[str, list[str]] = {}
    for job_id, (_, _, _, status, _, key, _) in snap.jobs.items():
        if status == "running" and key is not None:
            running.setdefault(str(key), []).append(job_id)
    return [f"sequence: {key} runs {ids}" for key, ids in running.items() if len(ids) > 1]


def not_settled(target: str) -> list[str]:
    """Every pending job with nothing to wait for, and every dependency count that is wrong."""
    return unsettled(target)


@dataclasses.dataclass
class Wait:
    """One wait on a job: what it returned (None until it did), and the job's end."""

    job_id: str
    returned: bool = False
    outcome: object = None
    ended: str | None = None


def unanswered(waits: Sequence[Wait]) -> list[str]:
    """Each wait that never returned, or returned other than its job's end."""
    import jobtable

    expected = {
        "succeeded": int,
        "failed": jobtable.JobFailed,
        "cancelled": jobtable.JobCancelled,
    }
    breaches = []
    for wait in waits:
        if not wait.returned:
            breaches.append(f"waiter: the wait on {wait.job_id} never returned")
        elif wait.ended is None or not isinstance(wait.outcome, expected[wait.ended]):
            breaches.append(
                f"waiter: the wait on {wait.job_id} returned {wait.outcome!r}, job {wait.ended}"
            )
    return breaches
