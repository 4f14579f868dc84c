"""The Queries seam as both engines implement it: the runner's one write per cycle.

Each test runs once per engine (a SQLite file, and a schema of its own on
the PostgreSQL server) and reads what it wrote back through GetJob.
"""

from seam import engine_of, now

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.rows import JobRow, NewJob, Outcome


def enqueue(store: jobtable.Store, *ids: str) -> None:
    """Enqueues one job per id, in the order given."""

    def create(q: Queries) -> None:
        for job_id in ids:
            q.insert_jobs(kind="k", jobs=[NewJob(job_id, "{}", now())], now=now())

    engine_of(store).write(create)


def get(store: jobtable.Store, job_id: str) -> JobRow:
    row = engine_of(store).read(lambda q: q.get_job(id=job_id))
    assert row is not None
    return row


def finish_and_claim(
    store: jobtable.Store,
    outcomes: list[tuple[str, int, str | None, str | None]],
    max_jobs: int,
) -> tuple[list[str], list[str]]:
    """Runs FinishAndClaimJobs for outcomes (id, attempt, result, error).

    Returns the ids it finished, sorted, and the ids it claimed, oldest first.
    """
    finished, claimed = engine_of(store).write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[
                Outcome(
                    id, attempt, "succeeded" if error is None else "failed", result, error, None
                )
                for id, attempt, result, error in outcomes
            ],
            runner="r",
            queue="default",
            now=now(),
            max_jobs=max_jobs,
        )
    )
    return sorted(finished), [row.id for row in sorted(claimed, key=lambda row: row.seq)]


def test_finish_and_claim_stores_each_outcome_under_its_claim_and_claims_the_oldest(
    store: jobtable.Store,
) -> None:
    enqueue(store, "a", "b", "c", "d", "e")
    assert finish_and_claim(store, [], 3) == ([], ["a", "b", "c"])
    published = engine_of(store).write(
        lambda q: q.publish_job_result(result='"partial"', now=now(), id="b", attempt=1)
    )
    assert published == 1

    finished, claimed = finish_and_claim(
        store,
        [("a", 1, '"A"', None), ("b", 1, None, "boom"), ("c", 2, '"stale"', None)],
        1,
    )

    assert (finished, claimed) == (["a", "b"], ["d"])
    a, b, c = get(store, "a"), get(store, "b"), get(store, "c")
    assert (a.status, a.result, a.error) == ("succeeded", '"A"', None)
    # A failure keeps the result the job published.
    assert (b.status, b.result, b.error) == ("failed", '"partial"', "boom")
    # The outcome of a claim the job is no longer under changes nothing.
    assert (c.status, c.result, c.error) == ("running", None, None)
    assert get(store, "d").status == "running"
    assert get(store, "e").status == "queued"


def test_finish_and_claim_with_no_room_only_finishes(store: jobtable.Store) -> None:
    enqueue(store, "a", "b")
    finish_and_claim(store, [], 1)

    assert finish_and_claim(store, [("a", 1, "null", None)], 0) == (["a"], [])
    assert get(store, "a").status == "succeeded"
    assert get(store, "b").status == "queued"


def test_finishing_a_job_twice_changes_it_once(store: jobtable.Store) -> None:
    enqueue(store, "a")
    finish_and_claim(store, [], 1)
    assert finish_and_claim(store, [("a", 1, '"first"', None)], 0) == (["a"], [])

    assert finish_and_claim(store, [("a", 1, None, "second")], 0) == ([], [])
    row = get(store, "a")
    assert (row.status, row.result, row.error) == ("succeeded", '"first"', None)
