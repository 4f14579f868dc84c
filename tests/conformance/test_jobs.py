"""The job queries of the seam (queries/jobs.sql), alike on every engine.

Each case runs once per engine (conftest.py) and names with ``covers`` the
``Queries`` methods it exercises; test_seam_coverage.py checks that every
method has one. Cases are small: a few jobs, then what each query returns.
"""

from seam import claim, claim_rows, create, enqueue, now

from conformance.engine_kits import at, covers, moment
from jobtable import Unique
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import NewJob, Outcome


def later(job_id: str, run_at: str, queue: str = "default") -> NewJob:
    """A job of payload {} that runs from run_at on."""
    return NewJob(job_id, "{}", run_at, queue=queue)


@covers("insert_jobs", "get_job", "get_jobs")
def test_insert_then_get_one_and_several(opened: Engine) -> None:
    jobs = [NewJob("a", '{"n": 1}', now()), NewJob("b", "{}", now(), queue="q", priority=2)]
    opened.write(lambda q: q.insert_jobs(kind="k", jobs=jobs, now=now()))
    one = opened.read(lambda q: q.get_job(id="a"))
    rows = opened.read(lambda q: q.get_jobs(ids=["b", "a", "missing"]))
    assert one is not None
    assert (one.kind, one.status) == ("k", "queued")
    assert sorted(row.id for row in rows) == ["a", "b"]
    assert opened.read(lambda q: q.get_job(id="missing")) is None


@covers("insert_unique_jobs", "get_unique_holder")
def test_a_unique_key_is_held_by_one_job(opened: Engine) -> None:
    mask = Unique().mask

    def job(job_id: str) -> NewJob:
        return NewJob(job_id, "{}", now(), unique_key="key", unique_statuses=mask)

    stored = opened.write(lambda q: q.insert_unique_jobs(kind="k", jobs=[job("a")], now=now()))
    again = opened.write(
        lambda q: q.insert_unique_jobs(kind="k", jobs=[job("b"), job("c")], now=now())
    )
    holder = opened.read(lambda q: q.get_unique_holder(kind="k", unique_key="key"))
    assert (stored, again, holder) == ([True], [False, False], "a")
    assert opened.read(lambda q: q.get_unique_holder(kind="k", unique_key="other")) is None


@covers("finish_and_claim_jobs")
def test_finish_and_claim_stores_outcomes_then_claims(opened: Engine) -> None:
    enqueue(opened, "a", "b")
    claim(opened, 1)

    def finish(q: Queries) -> tuple[list[str], list[str]]:
        done = Outcome("a", 1, "succeeded", "1", None, None)
        stale = Outcome("a", 7, "failed", None, "stale", None)
        ids, rows = q.finish_and_claim_jobs(
            outcomes=[done, stale], runner="r", queue="default", now=now(), max_jobs=5
        )
        return ids, [row.id for row in rows]

    assert opened.write(finish) == (["a"], ["b"])
    job = opened.read(lambda q: q.get_job(id="a"))
    assert job is not None
    assert (job.status, job.result) == ("succeeded", "1")


@covers("next_run_at", "stage_jobs", "count_due_jobs")
def test_scheduled_jobs_are_staged_when_due(opened: Engine) -> None:
    soon, later_on = at(60), at(3600)
    opened.write(
        lambda q: q.insert_jobs(kind="k", jobs=[later("a", soon), later("b", later_on)], now=now())
    )
    assert opened.read(lambda q: q.next_run_at(queue="default")) == moment(soon)
    assert opened.read(lambda q: q.next_run_at(queue="other")) is None
    due = opened.read(lambda q: q.count_due_jobs(now=at(120)))
    assert [(row.queue, row.jobs, row.oldest_run_at) for row in due] == [
        ("default", 1, moment(soon))
    ]
    assert opened.write(lambda q: q.stage_jobs(queue="default", now=at(120))) == 1
    assert opened.read(lambda q: q.next_run_at(queue="default")) == moment(later_on)


@covers("ready_retries", "count_ready_jobs")
def test_a_job_waiting_for_a_retry_is_made_ready(opened: Engine) -> None:
    job = NewJob("a", "{}", now(), max_attempts=2)
    opened.write(lambda q: q.insert_jobs(kind="k", jobs=[job], now=now()))
    claim(opened, 1)
    retry = Outcome("a", 1, "queued", None, "boom", at(3600))
    opened.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[retry], runner="r", queue="default", now=now(), max_jobs=0
        )
    )
    assert opened.read(lambda q: q.count_ready_jobs()) == []
    assert opened.write(lambda q: q.ready_retries(queue="default")) == 1
    ready = opened.read(lambda q: q.count_ready_jobs())
    assert [(row.queue, row.jobs) for row in ready] == [("default", 1)]
    assert claim(opened, 5) == ["a"]


@covers("interrupt_running_jobs", "list_running_jobs")
def test_a_runners_running_jobs_are_listed_and_interrupted(opened: Engine) -> None:
    enqueue(opened, "a", "b")
    claim(opened, 1, "r1")
    claim(opened, 1, "r2")
    mine = opened.read(lambda q: q.list_running_jobs(runner="r1", before=at(60)))
    changed_since = opened.read(lambda q: q.list_running_jobs(runner="r1", before=at(-60)))
    assert [(row.id, row.attempt) for row in mine] == [("a", 1)]
    assert changed_since == []
    count = opened.write(lambda q: q.interrupt_running_jobs(error="stop", now=now(), runner="r1"))
    job = opened.read(lambda q: q.get_job(id="a"))
    assert count == 1
    assert job is not None
    assert job.status != "running"


@covers("interrupt_job")
def test_interrupting_one_attempt_needs_its_attempt(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1)
    stale = opened.write(lambda q: q.interrupt_job(error="x", now=now(), id="a", attempt=2))
    current = opened.write(lambda q: q.interrupt_job(error="x", now=now(), id="a", attempt=1))
    job = opened.read(lambda q: q.get_job(id="a"))
    assert (stale, current) == (0, 1)
    assert job is not None
    assert job.status != "running"


@covers("lock_job", "cancel_queued_job")
def test_a_queued_job_is_locked_then_cancelled(opened: Engine) -> None:
    enqueue(opened, "a")
    assert opened.write(lambda q: q.lock_job(id="a")) == "queued"
    assert opened.write(lambda q: q.lock_job(id="missing")) is None
    assert opened.write(lambda q: q.cancel_queued_job(now=now(), id="a")) == 1
    assert opened.write(lambda q: q.cancel_queued_job(now=now(), id="a")) == 0
    job = opened.read(lambda q: q.get_job(id="a"))
    assert job is not None
    assert job.status == "cancelled"


@covers("request_cancel", "notify_cancel", "list_cancel_requests")
def test_a_cancel_request_reaches_the_runner_of_the_job(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1, "r1")

    def request(q: Queries) -> int:
        count = q.request_cancel(now=now(), id="a")
        q.notify_cancel()
        return count

    assert opened.write(request) == 1
    asked = opened.read(lambda q: q.list_cancel_requests(runner="r1"))
    assert [(row.id, row.attempt) for row in asked] == [("a", 1)]
    assert opened.read(lambda q: q.list_cancel_requests(runner="r2")) == []


@covers("get_job_labels")
def test_tags_and_meta_are_read_back(opened: Engine) -> None:
    job = NewJob("a", "{}", now(), tags='["x"]', meta='{"m": 1}')
    opened.write(lambda q: q.insert_jobs(kind="k", jobs=[job], now=now()))
    labels = opened.read(lambda q: q.get_job_labels(id="a"))
    assert labels is not None
    assert ("x" in labels.tags, labels.meta is not None and '"m"' in labels.meta) == (True, True)
    assert opened.read(lambda q: q.get_job_labels(id="missing")) is None


@covers("list_jobs", "count_jobs")
def test_jobs_are_listed_newest_first_and_counted(opened: Engine) -> None:
    enqueue(opened, "a", "b", "c")
    claim(opened, 1)
    rows = opened.read(
        lambda q: q.list_jobs(
            before=2**62, status=None, kind=None, queue=None, tag=None, max_jobs=10
        )
    )
    queued = opened.read(
        lambda q: q.list_jobs(
            before=2**62, status="queued", kind="k", queue="default", tag=None, max_jobs=1
        )
    )
    counts = opened.read(lambda q: q.count_jobs())
    assert [row.id for row in rows] == ["c", "b", "a"]
    assert [row.id for row in queued] == ["c"]
    assert sorted((row.queue, row.status, row.jobs) for row in counts) == [
        ("default", "queued", 2),
        ("default", "running", 1),
    ]


@covers("delete_finished_jobs")
def test_finished_jobs_before_a_time_are_deleted(opened: Engine) -> None:
    enqueue(opened, "a", "b")
    claim(opened, 1)
    opened.write(lambda q: q.succeed_job(result=None, now=now(), id="a", attempt=1, run_trace=None))
    assert opened.write(lambda q: q.delete_finished_jobs(before=at(-3600), max_jobs=10)) == 0
    assert opened.write(lambda q: q.delete_finished_jobs(before=at(60), max_jobs=10)) == 1
    assert opened.read(lambda q: q.get_job(id="a")) is None
    assert opened.read(lambda q: q.get_job(id="b")) is not None


@covers("write", "read")
def test_claim_rows_of_one_write_are_seen_by_the_next_read(opened: Engine) -> None:
    opened.write(create("a"))
    rows = opened.write(lambda q: claim_rows(q, 1))
    job = opened.read(lambda q: q.get_job(id="a"))
    assert [row.id for row in rows] == ["a"]
    assert job is not None
    assert job.status == "running"


@covers("insert_debounced_job", "debounce_job")
def test_a_debounce_key_is_held_by_one_pending_job_whose_payload_moves(opened: Engine) -> None:
    def job(job_id: str, payload: str) -> NewJob:
        return NewJob(job_id, payload, now(), debounce_key="key")

    first = opened.write(
        lambda q: q.insert_debounced_job(kind="k", job=job("a", '{"n": 1}'), now=now())
    )
    second = opened.write(
        lambda q: q.insert_debounced_job(kind="k", job=job("b", '{"n": 2}'), now=now())
    )
    moved = opened.write(
        lambda q: q.debounce_job(
            kind="k", debounce_key="key", payload='{"n": 3}', replace=True, run_at=at(60), now=now()
        )
    )
    kept = opened.write(
        lambda q: q.debounce_job(
            kind="k",
            debounce_key="key",
            payload='{"n": 4}',
            replace=False,
            run_at=at(90),
            now=now(),
        )
    )
    nobody = opened.write(
        lambda q: q.debounce_job(
            kind="k", debounce_key="other", payload="{}", replace=True, run_at=now(), now=now()
        )
    )
    row = opened.read(lambda q: q.get_job_record(id="a"))
    assert (first, second, moved, kept, nobody) == (True, False, "a", "a", None)
    assert opened.read(lambda q: q.get_job(id="b")) is None
    assert row is not None
    assert row.payload == '{"n": 3}'


@covers("get_job_progress")
def test_progress_counts_the_partial_results_published(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1)
    before = opened.read(lambda q: q.get_job_progress(id="a"))

    def publish(result: str) -> None:
        opened.write(lambda q: q.publish_job_result(result=result, now=now(), id="a", attempt=1))

    publish("1")
    publish("2")
    after = opened.read(lambda q: q.get_job_progress(id="a"))
    assert before is not None
    assert after is not None
    assert (before.status, before.published) == ("running", 0)
    assert (after.status, after.published, after.result) == ("running", 2, "2")
    assert opened.read(lambda q: q.get_job_progress(id="missing")) is None
