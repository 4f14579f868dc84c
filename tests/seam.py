"""The tests' one way to the engine seam: a store's engine, and operations on Queries.

Every test that goes below the public API reaches the engine through
``engine_of``, claims through ``claim``, and takes the clock helpers
(``now``, ``timestamp``, ``new_id``) from here, so a change to how a store
holds its engine, to which query claims, or to where those helpers live is
made here once.
"""

from collections.abc import Callable, Sequence

import jobtable
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import ClaimedRow, JobRow, NewJob, Outcome
from jobtable._values import new_id, now, timestamp

__all__ = [
    "claim",
    "claim_rows",
    "create",
    "engine_of",
    "enqueue",
    "exists",
    "fail",
    "get",
    "new_id",
    "now",
    "timestamp",
]


def engine_of(store: jobtable.Store) -> Engine:
    """The engine every read and write of store goes through."""
    return store.engine


def create(job_id: str, kind: str = "k", *, at: str | None = None) -> Callable[[Queries], None]:
    """An operation that stores a queued job of kind with payload {} (at the time at, or now)."""

    def op(q: Queries) -> None:
        moment = at or now()
        q.insert_jobs(kind=kind, jobs=[NewJob(job_id, "{}", moment)], now=moment)

    return op


def get(job_id: str) -> Callable[[Queries], JobRow | None]:
    """An operation that reads the job job_id, or None."""

    def op(q: Queries) -> JobRow | None:
        return q.get_job(id=job_id)

    return op


def exists(engine: Engine, job_id: str) -> bool:
    """Whether engine stores the job job_id."""
    return engine.read(get(job_id)) is not None


def enqueue(engine: Engine, *ids: str) -> None:
    """Stores one queued job per id, each in its own transaction, in the order given."""
    for job_id in ids:
        engine.write(create(job_id))


def claim_rows(
    q: Queries, max_jobs: int, runner: str | None = "r", *, at: str | None = None
) -> Sequence[ClaimedRow]:
    """Claims up to max_jobs ready jobs of the default queue for runner: no outcomes."""
    _, claimed = q.finish_and_claim_jobs(
        outcomes=[],
        runner=runner,
        queue="default",
        now=at or now(),
        max_jobs=max_jobs,
    )
    return claimed


def claim(engine: Engine, max_jobs: int, runner: str = "r") -> list[str]:
    """Claims up to max_jobs jobs for runner in one write; returns their ids, oldest first."""
    rows = engine.write(lambda q: claim_rows(q, max_jobs, runner))
    return [row.id for row in sorted(rows, key=lambda row: row.seq)]


def fail(engine: Engine, job_id: str) -> None:
    """Claims job_id, which must be the oldest ready job, and stores its one attempt as failed."""
    assert claim(engine, 1) == [job_id]
    outcome = Outcome(job_id, 1, "failed", None, "boom", None)
    engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[outcome], runner="r", queue="default", now=now(), max_jobs=0
        )
    )
