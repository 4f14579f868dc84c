"""The dashboard's operator pages over HTTP: search, pick-lists, bulk actions, kinds, health.

Each test runs on every engine (``store``) against a real uvicorn; jobs reach
their states through the store's operations or a claim on the seam.
"""

import datetime
import re

from dashboard_server import Client, csrf_token, serve
from seam import claim

import jobtable

report = jobtable.Kind("report", dict, dict)
mail = jobtable.Kind("mail", dict, dict, queue="outbox")


def test_search_by_exact_id_opens_the_job_page(store: jobtable.Store) -> None:
    job_id = report.enqueue(store, {})
    with serve(jobtable.dashboard(store)) as base:
        reply = Client(base).get(f"/search?q={job_id}")
    assert reply.status == 303
    assert reply.headers["location"] == f"/jobs/{job_id}"


def test_search_by_payload_text_lists_recent_matches_and_says_how_far_it_looks(
    store: jobtable.Store,
) -> None:
    hit = report.enqueue(store, {"customer": "ACME Corp <b>"})
    miss = report.enqueue(store, {"customer": "Initech"})
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get("/search?q=acme+corp")
        empty = client.get("/search?q=nowhere-to-be-found")
        bad = client.get("/search?q=" + "x" * 201)
    assert page.status == 200
    assert f'data-id="{hit}"' in page.text
    assert f'data-id="{miss}"' not in page.text
    assert "10,000 most recent jobs" in page.text
    assert "No job matches." in empty.text
    assert bad.status == 400


def test_the_job_list_offers_the_kinds_and_queues_that_exist_as_pick_lists(
    store: jobtable.Store,
) -> None:
    report.enqueue(store, {})
    mail.enqueue(store, {})
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get("/jobs?kind=gone")
    kinds = re.search(r'<select name="kind">(.*?)</select>', page.text, re.S)
    queues = re.search(r'<select name="queue">(.*?)</select>', page.text, re.S)
    assert kinds is not None
    assert queues is not None
    assert re.findall(r'value="([^"]*)"', kinds.group(1)) == ["", "gone", "mail", "report"]
    assert 'value="gone" selected' in kinds.group(1)
    assert re.findall(r'value="([^"]*)"', queues.group(1)) == ["", "default", "outbox"]


def bulk(client: Client, token: str, fields: list[tuple[str, str]]) -> tuple[str, str]:
    """Posts a bulk form, then its confirmation; returns the two replies' texts/locations."""
    first = client.post("/bulk", [("csrf", token), *fields])
    assert first.status == 200, first.text
    second = client.post("/bulk", [("csrf", token), *fields, ("confirm", "yes")])
    assert second.status == 303, second.text
    return first.text, second.headers["location"]


def test_bulk_cancel_and_delete_of_selected_jobs_ask_first_then_act(
    store: jobtable.Store,
) -> None:
    running, queued, kept = (report.enqueue(store, {"n": n}) for n in range(3))
    assert claim(store.engine, 1) == [running]
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        token = csrf_token(client.get("/jobs").text)
        asked = client.post(
            "/bulk", [("csrf", token), ("action", "cancel"), ("id", running), ("id", queued)]
        )
        assert "Cancel these 2 selected jobs?" in asked.text
        assert store.inspect(queued).status == jobtable.Status.QUEUED  # nothing yet
        _, went = bulk(client, token, [("action", "cancel"), ("id", running), ("id", queued)])
        assert "notice=bulk-cancel&count=2" in went
        _, deleted = bulk(client, token, [("action", "delete"), ("id", queued), ("id", running)])
        listed = client.get("/jobs?" + deleted.split("?", 1)[1])
    assert store.inspect(running).cancel_requested
    assert store.inspect(running).status == jobtable.Status.RUNNING
    assert store.inspect(kept).status == jobtable.Status.QUEUED
    assert "count=1" in deleted
    assert "Deleted: 1" in listed.text
    assert [r.id for r in store.list_jobs()] == [kept, running]


def test_bulk_actions_by_filter_change_only_the_matching_jobs(store: jobtable.Store) -> None:
    reports = [report.enqueue(store, {"n": n}) for n in range(3)]
    letter = mail.enqueue(store, {})
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get("/jobs?kind=report")
        assert 'id="bulk-filter"' in page.text
        token = csrf_token(page.text)
        asked, _ = bulk(
            client, token, [("action", "cancel"), ("scope", "filter"), ("kind", "report")]
        )
        assert "matching kind report?" in asked
        _, went = bulk(
            client,
            token,
            [("action", "delete"), ("scope", "filter"), ("status", "cancelled")],
        )
        unfiltered = client.post(
            "/bulk", [("csrf", token), ("action", "delete"), ("scope", "filter")]
        )
    assert "count=3" in went
    assert [r.id for r in store.list_jobs()] == [letter]
    assert all(i not in {r.id for r in store.list_jobs()} for i in reports)
    assert unfiltered.status == 400
    assert "needs a filter" in unfiltered.text


def test_bulk_posts_need_the_csrf_token_and_are_refused_when_read_only(
    store: jobtable.Store,
) -> None:
    job_id = report.enqueue(store, {})
    form = [("action", "delete"), ("id", job_id), ("confirm", "yes")]
    with serve(jobtable.dashboard(store)) as base:
        refused = Client(base).post("/bulk", form)
    with serve(jobtable.dashboard(store, read_only=True)) as base:
        client = Client(base)
        page = client.get("/jobs")
        read_only = client.post("/bulk", form)
    assert refused.status == 403
    assert read_only.status == 403
    assert 'name="id"' not in page.text
    assert store.inspect(job_id).status == jobtable.Status.QUEUED


def test_the_kinds_page_shows_each_kinds_last_hour(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, queues={"default": 1, "outbox": 1})

    @runner.handler(report)
    def run_report(ctx: jobtable.JobContext[dict], payload: dict) -> dict:  # type: ignore[type-arg]
        if payload.get("fail"):
            raise jobtable.Failure("bad report")
        return {}

    for fail in (False, False, False, True):
        report.enqueue(store, {"fail": fail})
    import asyncio

    async def drain() -> None:
        while await runner.run_next() is not None:
            pass

    asyncio.run(drain())
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get("/kinds")
    row = re.search(r'<tr data-kind="report">(.*?)</tr>', page.text, re.S)
    assert row is not None
    assert re.search(r'data-figure="finished">4<', row.group(1))
    assert re.search(r'data-figure="failure-rate">25.0%<', row.group(1))
    assert " ms<" in row.group(1) or " s<" in row.group(1)


def test_the_overview_alarms_when_due_jobs_have_no_live_runner(store: jobtable.Store) -> None:
    report.enqueue(store, {})
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get("/live/overview")
    assert 'data-alarm="no_live_runner"' in page.text
    assert "1 job due and no live runner" in page.text


def test_a_job_held_by_a_dead_runner_says_so_and_a_scheduled_one_shows_its_run_at(
    store: jobtable.Store,
) -> None:
    held = report.enqueue(store, {})
    assert claim(store.engine, 1, runner="crashed") == [held]
    at = datetime.datetime(2099, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    later = report.enqueue(store, {}, run_at=at)
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        pages = [client.get(p).text for p in (f"/jobs/{held}", "/jobs", "/", f"/jobs/{later}")]
    assert re.search(r'id="state">\(held by a dead runner\)<', pages[0])
    assert "held by a dead runner" in pages[1]
    assert 'data-alarm="dead-held"' in pages[2]
    assert "scheduled for 2099-01-02 03:04:05Z" in pages[1]
    assert "scheduled for 2099-01-02 03:04:05Z" in pages[3]


def test_a_finished_job_without_a_result_says_nothing_of_a_partial_result(
    store: jobtable.Store,
) -> None:
    job_id = report.enqueue(store, {})
    store.cancel(job_id)
    running = report.enqueue(store, {})
    assert claim(store.engine, 1) == [running]
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        cancelled, live = client.get(f"/jobs/{job_id}").text, client.get(f"/jobs/{running}").text
    assert "None yet" not in cancelled
    assert "Partial result" not in cancelled
    assert "No partial result yet." in live


def test_bulk_retry_of_selected_jobs_counts_only_those_no_dependency_blocks(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("bulk-retry")
    a = wf.add(report, {"n": 1})
    b = wf.add(report, {"n": 2}, after=[a])
    wf.enqueue(store)
    store.cancel(a.id)  # b is cancelled with it, naming it
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        token = csrf_token(client.get("/jobs").text)
        _, went = bulk(client, token, [("action", "retry"), ("id", b.id)])
        listed = client.get("/jobs?" + went.split("?", 1)[1])
        assert "count=0" in went
        assert store.inspect(b.id).status == jobtable.Status.CANCELLED
        _, went = bulk(client, token, [("action", "retry"), ("id", b.id), ("id", a.id)])
    assert (
        "Queued again: 0 (failed or cancelled ones no failed, cancelled or deleted" in listed.text
    )
    # Ticked together: b is still refused, and the retry of a brings it back.
    assert "count=1" in went
    assert store.inspect(a.id).status == jobtable.Status.QUEUED
    assert store.inspect(b.id).status == jobtable.Status.PENDING
