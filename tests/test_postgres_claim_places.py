"""PostgreSQL's claims resume where the last one stopped, and no job ready behind that place waits.

The claim starts after the place (priority, seq) where the process's last
claim of the queue stopped, so that the dead index entries a pinned xmin
keeps at the head of jobs_queued are not visited (claim_cursor). Each test
here makes a job ready behind the place in one way and checks that the
next claim takes it: the runner's engine rescans only once an hour, so
nothing but the rewind under test can find it.
"""

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from seam import claim, claim_rows, enqueue, fail, now

from jobtable._engines.base import Queries
from jobtable._engines.postgres.claim_cursor import HEAD, ClaimCursors
from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._engines.postgres.queries import queries
from jobtable._engines.rows import NewJob, Outcome

pytestmark = pytest.mark.postgres

LIMIT = 10.0
"""Seconds a test waits for a notification before it fails."""


@pytest.fixture
def runner(pg_url: str) -> Iterator[PostgresEngine]:
    """The runner's engine, whose claims go back to a queue's head only when rewound."""
    opened = PostgresEngine.open(pg_url)
    opened._cursors = ClaimCursors(rescan=3600.0)
    yield opened
    opened.close()


@pytest.fixture
def other(pg_url: str) -> Iterator[PostgresEngine]:
    """Another process's engine on the same schema: an operator's or an application's."""
    opened = PostgresEngine.open(pg_url)
    yield opened
    opened.close()


def test_a_claim_resumes_after_the_jobs_the_last_one_took(runner: PostgresEngine) -> None:
    enqueue(runner, "a", "b", "c")
    assert claim(runner, 1) == ["a"]
    place = runner._cursors.start("default", None)
    assert place != HEAD
    assert claim(runner, 5) == ["b", "c"]


def test_a_job_another_process_retries_is_claimed_before_newer_ones(
    runner: PostgresEngine, other: PostgresEngine
) -> None:
    enqueue(runner, "a", "b", "c")
    fail(runner, "a")
    assert claim(runner, 1) == ["b"]
    woken = threading.Event()
    stop = runner.listen(woken.set)
    try:

        def retry(q: Queries) -> None:
            assert q.requeue_job(now=now(), id="a") == 1
            q.wake_runners()

        other.write(retry)
        assert woken.wait(LIMIT), "the retry did not wake the runner"
        assert claim(runner, 1) == ["a"], "the retried job stood behind the place"
    finally:
        stop()


def test_a_job_this_process_retries_is_claimed_at_once(runner: PostgresEngine) -> None:
    enqueue(runner, "a", "b", "c")
    fail(runner, "a")
    assert claim(runner, 1) == ["b"]
    assert runner.write(lambda q: q.requeue_failed_jobs(now=now(), kind=None, queue=None)) == 1
    assert claim(runner, 1) == ["a"]


def test_a_retry_the_runner_stores_is_claimed_before_newer_ones(runner: PostgresEngine) -> None:
    enqueue(runner, "a", "b")
    assert claim(runner, 1) == ["a"]
    again = Outcome("a", 1, "queued", None, "boom", None)
    # A record alone, as the runner sends it after run_next: it names no queue.
    runner.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[again], runner="r", queue="", now=now(), max_jobs=0
        )
    )
    assert claim(runner, 1) == ["a"]


def test_a_claim_rolled_back_leaves_nothing_behind(runner: PostgresEngine) -> None:
    enqueue(runner, "a", "b")

    def claim_then_fail(q: Queries) -> None:
        assert [row.id for row in claim_rows(q, 1)] == ["a"]
        raise LookupError("rolled back")

    with pytest.raises(LookupError):
        runner.write(claim_then_fail)
    assert claim(runner, 1) == ["a"], "the rolled-back claim's job was skipped"


def test_an_enqueue_that_commits_late_is_claimed_at_the_next_rescan(
    pg_url: str, runner: PostgresEngine
) -> None:
    runner._cursors = ClaimCursors(rescan=0.2)
    enqueue(runner, "a")
    with psycopg.connect(pg_url) as late:
        # Its seq is taken now; its commit comes after a newer job's claim.
        queries(late).insert_jobs(kind="k", jobs=[NewJob("late", "{}", now())], now=now())
        enqueue(runner, "b")
        assert claim(runner, 5) == ["a", "b"]
        late.commit()
    assert claim(runner, 5) == [], "claimed from the place, before the rescan is due"
    time.sleep(0.3)  # the rescan period, which this test is about
    assert claim(runner, 5) == ["late"]


def test_cursors_keep_a_place_per_queue_and_kinds() -> None:
    clock = [0.0]
    cursors = ClaimCursors(rescan=1.0, clock=lambda: clock[0])
    for queue, kinds in [("q", None), ("q", ["b", "a"]), ("r", None)]:
        assert cursors.start(queue, kinds) == HEAD, "no place yet"
    cursors.claimed("q", None, [(0, 5), (0, 9), (0, 7)])
    cursors.claimed("q", ["b", "a"], [(1, 3)])
    cursors.claimed("r", None, [(0, 4)])
    cursors.claimed("r", None, [])  # a claim that took nothing keeps the place
    assert cursors.start("q", None) == (0, 9)
    assert cursors.start("q", ["a", "b"]) == (1, 3)
    cursors.rewind("q")
    assert cursors.start("q", None) == HEAD
    assert cursors.start("q", ["a", "b"]) == HEAD
    assert cursors.start("r", None) == (0, 4)
    clock[0] = 1.0
    assert cursors.start("r", None) == HEAD, "a rescan is due once a second"
    cursors.rewind()
    cursors.claimed("r", None, [(2, 1)])
    assert cursors.start("r", None) == (2, 1)
