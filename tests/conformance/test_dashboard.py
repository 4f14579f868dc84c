"""The dashboard's queries of the seam (queries/dashboard.sql), alike on every engine.

Its bulk actions on workflows' jobs (pending cancels, needed jobs) are with
the workflow queries in test_workflows.py.
"""

from seam import claim, enqueue, now

from conformance.engine_kits import at, covers, moment
from jobtable._engines.base import Engine
from jobtable._engines.rows import NewJob


def insert(engine: Engine, kind: str, *jobs: NewJob) -> None:
    """Stores jobs of kind in one write."""
    engine.write(lambda q: q.insert_jobs(kind=kind, jobs=list(jobs), now=now()))


@covers("list_kind_names", "list_queue_names", "list_running_queues")
def test_kinds_and_queues_are_named_once_each(opened: Engine) -> None:
    insert(opened, "mail", NewJob("a", "{}", now()), NewJob("b", "{}", now(), queue="q"))
    insert(opened, "thumb", NewJob("c", "{}", now(), queue="q"))
    claim(opened, 1, "r1")
    kinds = opened.read(lambda q: q.list_kind_names())
    queues = opened.read(lambda q: q.list_queue_names())
    running = opened.read(lambda q: q.list_running_queues())
    assert sorted(row.kind for row in kinds) == ["mail", "thumb"]
    assert sorted(row.queue for row in queues) == ["default", "q"]
    assert [(row.id, row.runner, row.queue) for row in running] == [("a", "r1", "default")]


@covers("search_payloads")
def test_payloads_are_searched_in_any_case_newest_first(opened: Engine) -> None:
    insert(
        opened,
        "k",
        NewJob("a", '{"to": "Ann"}', now()),
        NewJob("b", '{"to": "bob"}', now()),
        NewJob("c", '{"to": "ANNE"}', now()),
    )
    found = opened.read(lambda q: q.search_payloads(scan=10, text="ann", max_jobs=10))
    within = opened.read(lambda q: q.search_payloads(scan=1, text="ann", max_jobs=10))
    assert [row.id for row in found] == ["c", "a"]
    assert [row.id for row in within] == ["c"]


@covers("cancel_queued_matching", "request_cancel_matching")
def test_matching_jobs_are_cancelled_or_asked_to_cancel(opened: Engine) -> None:
    insert(opened, "k", NewJob("a", "{}", now()), NewJob("b", "{}", now()))
    insert(opened, "other", NewJob("c", "{}", now()))
    claim(opened, 1, "r1")
    asked = opened.write(lambda q: q.request_cancel_matching(now=now(), kind="k", queue=None))
    cancelled = opened.write(
        lambda q: q.cancel_queued_matching(now=now(), kind="k", queue="default", max_jobs=10)
    )
    requests = opened.read(lambda q: q.list_cancel_requests(runner="r1"))
    statuses = opened.read(lambda q: q.get_jobs(ids=["b", "c"]))
    assert (asked, cancelled) == (1, 1)
    assert [row.id for row in requests] == ["a"]
    assert sorted((row.id, row.status) for row in statuses) == [
        ("b", "cancelled"),
        ("c", "queued"),
    ]


@covers("delete_matching")
def test_matching_jobs_are_deleted_unless_running(opened: Engine) -> None:
    enqueue(opened, "a", "b", "c")
    claim(opened, 1)
    deleted = opened.write(
        lambda q: q.delete_matching(status=None, kind="k", queue=None, max_jobs=1)
    )
    rest = opened.read(lambda q: q.get_jobs(ids=["a", "b", "c"]))
    assert deleted == 1
    assert sorted(row.id for row in rest) == ["a", "c"]


@covers("finished_since", "oldest_due_by_queue")
def test_finished_jobs_and_the_oldest_due_job_of_each_queue(opened: Engine) -> None:
    past = at(-60)
    insert(opened, "k", NewJob("a", "{}", past), NewJob("b", "{}", now(), queue="q"))
    claim(opened, 1)
    opened.write(lambda q: q.succeed_job(result=None, now=now(), id="a", attempt=1, run_trace=None))
    finished = opened.read(lambda q: q.finished_since(since=at(-3600), max_jobs=10))
    due = opened.read(lambda q: q.oldest_due_by_queue(now=at(60)))
    assert [(row.kind, row.status, row.run_at) for row in finished] == [
        ("k", "succeeded", moment(past))
    ]
    assert [(row.queue, row.jobs) for row in due] == [("q", 1)]
