"""The workflow queries of the seam (queries/workflows.sql), alike on every engine.

Each case builds the workflow "w" of two jobs, "a" and "b", b waiting for a
to succeed, and drives the queries a run, a failure, a retry or a cancel of
it takes.
"""

from seam import claim, now

from conformance.engine_kits import at, covers
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import NewJob, Outcome
from jobtable._engines.workflow_queries import JobDep, WorkflowJob

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def build(engine: Engine, created: str | None = None) -> None:
    """Stores workflow w: job a, and job b waiting for a to succeed."""

    def op(q: Queries) -> None:
        q.create_workflow(id="w", name="nightly", now=created or now(), deadline_at=None)
        jobs = [
            WorkflowJob("k", NewJob("a", "{}", now()), 0),
            WorkflowJob("k", NewJob("b", "{}", now()), 1),
        ]
        q.insert_workflow_jobs(workflow_id="w", jobs=jobs, now=now())
        q.create_job_deps(deps=[JobDep("a", "b", run_on_failure=False, feeds=False)])

    engine.write(op)


def end_a(engine: Engine, state: str) -> None:
    """Claims a and stores its end as state, settling b in the same write."""
    claim(engine, 1)
    error = "boom" if state == "failed" else None
    outcome = Outcome("a", 1, state, None, error, None, workflow=True, run_trace=TRACE)
    engine.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[outcome], runner="r", queue="default", now=now(), max_jobs=0
        )
    )


def status(engine: Engine, job_id: str) -> str | None:
    """The status of job_id, None when no job has it."""
    job = engine.read(lambda q: q.get_job(id=job_id))
    return None if job is None else job.status


@covers("create_workflow", "insert_workflow_jobs", "create_job_deps", "workflow_name")
def test_a_workflow_is_stored_with_its_jobs_and_edges(opened: Engine) -> None:
    build(opened)
    assert opened.read(lambda q: q.workflow_name(id="w")) == "nightly"
    assert opened.read(lambda q: q.workflow_name(id="x")) is None
    assert (status(opened, "a"), status(opened, "b")) == ("queued", "pending")


@covers("workflow_jobs", "workflow_edges", "list_dependencies", "list_dependents", "job_workflow")
def test_a_workflows_graph_is_read_back(opened: Engine) -> None:
    build(opened)
    jobs = opened.read(lambda q: q.workflow_jobs(workflow_id="w"))
    edges = opened.read(lambda q: q.workflow_edges(workflow_id="w"))
    deps = opened.read(lambda q: q.list_dependencies(job="b"))
    dependents = opened.read(lambda q: q.list_dependents(dep="a"))
    row = opened.read(lambda q: q.job_workflow(id="b"))
    assert [(job.id, job.kind, job.status) for job in jobs] == [
        ("a", "k", "queued"),
        ("b", "k", "pending"),
    ]
    assert edges == [("a", "b")]
    assert [(d.id, d.status, d.run_on_failure) for d in deps] == [("a", "queued", False)]
    assert [d.id for d in dependents] == ["b"]
    assert row == ("w", "nightly", None, False)
    assert opened.read(lambda q: q.job_workflow(id="missing")) is None


@covers("list_workflows")
def test_workflows_are_listed_with_their_counts(opened: Engine) -> None:
    build(opened)
    rows = opened.read(lambda q: q.list_workflows(name=None, before=None, limit=10))
    named = opened.read(lambda q: q.list_workflows(name="other", before=None, limit=10))
    assert sorted((row.id, row.name, row.status, row.jobs) for row in rows) == [
        ("w", "nightly", "pending", 1),
        ("w", "nightly", "queued", 1),
    ]
    assert named == []


@covers("settle_ended", "stranded_deps", "dependency_traces")
def test_a_success_settled_later_readies_its_dependent(opened: Engine) -> None:
    build(opened)
    claim(opened, 1)
    opened.write(lambda q: q.succeed_job(result="1", now=now(), id="a", attempt=1, run_trace=TRACE))
    assert opened.read(lambda q: q.stranded_deps()) == ["a"]
    opened.write(lambda q: q.settle_ended(ids=["a"], now=now()))
    assert opened.read(lambda q: q.stranded_deps()) == []
    assert status(opened, "b") == "queued"
    assert opened.read(lambda q: q.dependency_traces(job="b")) == [("a", TRACE)]


@covers("blocking_deps", "revive_dependents")
def test_a_failure_cancels_its_dependent_until_it_is_retried(opened: Engine) -> None:
    build(opened)
    end_a(opened, "failed")
    assert status(opened, "b") == "cancelled"
    assert opened.read(lambda q: q.blocking_deps(job="b")) == ["a"]
    row = opened.read(lambda q: q.job_workflow(id="b"))
    assert row is not None
    assert row.blocked_by == "a"

    def retry(q: Queries) -> list[str]:
        q.requeue_job(now=now(), id="a")
        return q.revive_dependents(dep="a", now=now())

    assert opened.write(retry) == ["b"]
    assert (status(opened, "a"), status(opened, "b")) == ("queued", "pending")
    assert opened.read(lambda q: q.failed_workflow_jobs(kind=None, queue=None)) == []


@covers("reopen_dependents", "wait_again")
def test_a_reopened_dependency_makes_its_dependent_wait_again(opened: Engine) -> None:
    build(opened)
    end_a(opened, "succeeded")
    assert status(opened, "b") == "queued"

    def reopen(q: Queries) -> None:
        q.reopen_dependents(dep="a", now=now())
        q.wait_again(job="b")

    opened.write(reopen)
    assert status(opened, "b") == "pending"
    assert [row.id for row in opened.read(lambda q: q.list_dependencies(job="b"))] == ["a"]


@covers("forget_dependency")
def test_a_forgotten_dependency_leaves_its_dependent_cancelled_by_it(opened: Engine) -> None:
    build(opened)

    def delete_a(q: Queries) -> int:
        q.cancel_workflow_jobs(workflow_id="w", now=now())
        q.forget_dependency(dep="a")
        return q.delete_job(id="a")

    assert opened.write(delete_a) == 1
    row = opened.read(lambda q: q.job_workflow(id="b"))
    assert status(opened, "b") == "cancelled"
    assert row is not None
    assert row.blocked_by == "a"


@covers("lock_workflow", "request_cancel_workflow", "cancel_workflow_jobs")
def test_a_workflow_is_cancelled_whole(opened: Engine) -> None:
    build(opened)
    claim(opened, 1, "r1")

    def cancel(q: Queries) -> tuple[bool, bool, int, list[str]]:
        known, unknown = q.lock_workflow(id="w"), q.lock_workflow(id="x")
        asked = q.request_cancel_workflow(workflow_id="w", now=now())
        return known, unknown, asked, q.cancel_workflow_jobs(workflow_id="w", now=now())

    assert opened.write(cancel) == (True, False, 1, ["b"])
    asked = opened.read(lambda q: q.list_cancel_requests(runner="r1"))
    assert [row.id for row in asked] == ["a"]


@covers("hold_workflow", "cancel_added_jobs")
def test_jobs_added_by_a_job_asked_to_cancel_are_cancelled(opened: Engine) -> None:
    build(opened)
    claim(opened, 1, "r1")
    opened.write(lambda q: q.request_cancel(now=now(), id="a"))

    def add(q: Queries) -> int:
        q.hold_workflow(id="w")
        added = [WorkflowJob("k", NewJob("c", "{}", now()), 0)]
        q.insert_workflow_jobs(workflow_id="w", jobs=added, now=now())
        return q.cancel_added_jobs(ids=["c"], adder="a", now=now())

    assert opened.write(add) == 1
    assert opened.write(lambda q: q.cancel_added_jobs(ids=["b"], adder="b", now=now())) == 0
    assert status(opened, "c") == "cancelled"


@covers("list_needed_matching", "cancel_pending_matching")
def test_bulk_actions_see_pending_and_needed_jobs(opened: Engine) -> None:
    build(opened)
    needed = opened.read(
        lambda q: q.list_needed_matching(status=None, kind="k", queue=None, max_jobs=10)
    )
    cancelled = opened.write(
        lambda q: q.cancel_pending_matching(now=now(), kind="k", queue=None, max_jobs=10)
    )
    assert [row.id for row in needed] == ["a"]
    assert cancelled == 1
    assert status(opened, "b") == "cancelled"


@covers("delete_empty_workflows")
def test_only_old_workflows_with_no_job_left_are_deleted(opened: Engine) -> None:
    build(opened, created=at(-3600))
    opened.write(lambda q: q.create_workflow(id="empty", name="n", now=at(-3600), deadline_at=None))
    opened.write(lambda q: q.create_workflow(id="young", name="n", now=now(), deadline_at=None))
    deleted = opened.write(lambda q: q.delete_empty_workflows(before=at(-60), max_workflows=10))
    assert deleted == 1
    assert opened.read(lambda q: q.workflow_name(id="empty")) is None
    assert opened.read(lambda q: q.workflow_name(id="young")) == "n"
    assert opened.read(lambda q: q.workflow_name(id="w")) == "nightly"


@covers("overdue_workflows", "mark_deadline_done")
def test_a_passed_deadline_is_listed_until_marked_done(opened: Engine) -> None:
    def create(q: Queries) -> None:
        q.create_workflow(id="late", name="n", now=now(), deadline_at=at(-1))
        q.create_workflow(id="soon", name="n", now=now(), deadline_at=at(3600))
        q.create_workflow(id="none", name="n", now=now(), deadline_at=None)

    opened.write(create)
    overdue = opened.read(lambda q: q.overdue_workflows(now=now(), max_workflows=10))
    opened.write(lambda q: q.mark_deadline_done(id="late"))
    after = opened.read(lambda q: q.overdue_workflows(now=now(), max_workflows=10))
    assert (overdue, after) == (["late"], [])


@covers("hand_over_dependents")
def test_a_handed_over_dependent_waits_for_the_heir_too(opened: Engine) -> None:
    build(opened)

    def hand_over(q: Queries) -> None:
        q.insert_workflow_jobs(
            workflow_id="w", jobs=[WorkflowJob("k", NewJob("h", "{}", now()), 2)], now=now()
        )
        q.hand_over_dependents(job="a", heir="h", ids=["h"], now=now())

    opened.write(hand_over)
    deps = opened.read(lambda q: q.list_dependencies(job="b"))
    assert sorted(d.id for d in deps) == ["a", "h"]
    assert status(opened, "b") == "pending"


@covers("workflow_slot", "retake_workflow_slot")
def test_a_limited_workflow_holds_waits_for_and_frees_its_slot(opened: Engine) -> None:
    def create(workflow_id: str, job_id: str) -> str | None:
        def op(q: Queries) -> str | None:
            slot = q.create_workflow(
                id=workflow_id, name="limited", now=now(), deadline_at=None, concurrency=1
            )
            waits = int(slot == "waiting")
            job = WorkflowJob("k", NewJob(job_id, "{}", now()), waits)
            q.insert_workflow_jobs(workflow_id=workflow_id, jobs=[job], now=now())
            return slot

        return opened.write(op)

    assert create("w1", "a") == "held"
    assert create("w2", "b") == "waiting"
    assert opened.read(lambda q: q.workflow_slot(id="w2")) == "waiting"
    assert claim(opened, 2) == ["a"]  # b waits, pending, for w2's slot
    outcome = Outcome("a", 1, "succeeded", "{}", None, None, workflow=True, run_trace=None)
    opened.write(
        lambda q: q.finish_and_claim_jobs(
            outcomes=[outcome], runner="r", queue="default", now=now(), max_jobs=0
        )
    )
    # a's end freed w1's slot and admitted w2 in the same write.
    slots = opened.read(lambda q: [q.workflow_slot(id="w1"), q.workflow_slot(id="w2")])
    assert slots == ["freed", "held"]
    assert claim(opened, 1) == ["b"]
    opened.write(lambda q: q.retake_workflow_slot(id="w1"))
    assert opened.read(lambda q: q.workflow_slot(id="w1")) == "held"
    assert opened.read(lambda q: q.workflow_slot(id="none")) is None
