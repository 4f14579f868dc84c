"""The dashboard's workflow page and the job page's workflow links, over HTTP on every engine."""

import pathlib
import re
import sys
from collections.abc import Iterator

import pytest

import jobtable

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "dashboard"))
from dashboard_server import Client, csrf_token, serve

ping = jobtable.Kind("ping", int, int)


@pytest.fixture
def sqlite_store(tmp_path: pathlib.Path) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(tmp_path / "jobs.db") as store:
        yield store


def test_the_job_page_shows_the_workflow_and_offers_cancel_of_a_pending_job(
    sqlite_store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("nightly")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    wf_id = wf.enqueue(sqlite_store)
    with serve(jobtable.dashboard(sqlite_store)) as base:
        page = Client(base).get(f"/jobs/{b.id}")
    assert page.status == 200
    assert f'<a href="/workflows/{wf_id}" id="workflow-link">nightly</a>' in page.text
    assert f"/jobs/{a.id}" in page.text
    assert 'class="status pending"' in page.text
    assert f"/jobs/{b.id}/cancel" in page.text


def diamond(store: jobtable.Store) -> tuple[str, list[jobtable.Node[int, int]]]:
    """A workflow a -> (b, c) -> d; its id and nodes."""
    wf = jobtable.Workflow("diamond <b>")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    c = wf.add(ping, 3, after=[a])
    d = wf.add(ping, 4, after=[b, c])
    return wf.enqueue(store), [a, b, c, d]


def layer_of(html: str) -> dict[str, str]:
    """Each job's layer on the workflow page, by job id."""
    found: dict[str, str] = {}
    for depth, body in re.findall(r'data-depth="(\d+)">(.*?)</section>', html, re.S):
        for job in re.findall(r'data-job="([^"]+)"', body):
            found[job] = depth
    return found


def test_the_store_reads_a_workflow_s_jobs_and_edges(store: jobtable.Store) -> None:
    workflow_id, (a, b, c, d) = diamond(store)
    graph = store.workflow(workflow_id)
    assert (graph.id, graph.name) == (workflow_id, "diamond <b>")
    assert [(n.id, n.status, n.dependencies) for n in graph.jobs] == [
        (a.id, jobtable.Status.QUEUED, []),
        (b.id, jobtable.Status.PENDING, [a.id]),
        (c.id, jobtable.Status.PENDING, [a.id]),
        (d.id, jobtable.Status.PENDING, [b.id, c.id]),
    ]
    with pytest.raises(jobtable.JobNotFound):
        store.workflow("no-such-workflow")
    with pytest.raises(jobtable.JobNotFound):
        store.workflow(a.id)
    with pytest.raises(TypeError, match="workflow id is int, want str"):
        store.workflow(7)  # type: ignore[arg-type]


def test_the_workflow_page_shows_counts_layers_kinds_statuses_and_links(
    store: jobtable.Store,
) -> None:
    workflow_id, (a, b, c, d) = diamond(store)
    store.cancel(c.id)
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get(f"/workflows/{workflow_id}")
    assert page.status == 200
    assert "Workflow diamond &lt;b&gt;" in page.text
    assert workflow_id in page.text
    assert 'data-status="queued">queued 1<' in page.text
    assert 'data-status="cancelled">cancelled 2<' in page.text  # c, and d which needed it
    assert 'data-status="pending">pending 1<' in page.text  # b waits for a
    assert 'data-status="running"' not in page.text
    assert layer_of(page.text) == {a.id: "0", b.id: "1", c.id: "1", d.id: "2"}
    for job in (a, b, c, d):
        assert f'<a href="/jobs/{job.id}"><strong>' in page.text
    assert f'<a href="#job-{b.id}">#2</a><a href="#job-{c.id}">#3</a>' in page.text
    assert f'action="/workflows/{workflow_id}/cancel"' in page.text
    assert "data-confirm=" in page.text


def test_an_unknown_workflow_is_a_404_page(store: jobtable.Store) -> None:
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get("/workflows/nope")
        token = csrf_token(client.get("/").text)
        cancel = client.post("/workflows/nope/cancel", {"csrf": token})
    assert page.status == 404
    assert "No workflow has this id" in page.text
    assert cancel.status == 404
    assert "No workflow has this id" in cancel.text


def test_cancel_workflow_posts_through_the_store(store: jobtable.Store) -> None:
    workflow_id, nodes = diamond(store)
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        token = csrf_token(client.get(f"/workflows/{workflow_id}").text)
        reply = client.post(f"/workflows/{workflow_id}/cancel", {"csrf": token})
        assert reply.status == 303, reply.text
        assert reply.headers["location"] == (
            f"/workflows/{workflow_id}?notice=workflow-cancel&count=4"
        )
        after = client.get(reply.headers["location"]).text
    assert "Workflow cancelled: 4 pending or queued jobs" in after
    assert 'data-status="cancelled">cancelled 4<' in after
    assert {store.get(n.id).status for n in nodes} == {jobtable.Status.CANCELLED}


def test_without_the_csrf_token_or_when_read_only_cancel_is_refused(
    store: jobtable.Store,
) -> None:
    workflow_id, nodes = diamond(store)
    with serve(jobtable.dashboard(store)) as base:
        refused = Client(base).post(f"/workflows/{workflow_id}/cancel", {})
    assert refused.status == 403
    assert "CSRF token is missing" in refused.text
    with serve(jobtable.dashboard(store, read_only=True)) as base:
        client = Client(base)
        page = client.get(f"/workflows/{workflow_id}")
        token = client.cookies["jobtable_csrf"]  # a valid token: read-only mode alone refuses
        read_only = client.post(f"/workflows/{workflow_id}/cancel", {"csrf": token})
    assert page.status == 200
    assert "Cancel workflow" not in page.text
    assert read_only.status == 403
    assert "read-only" in read_only.text
    assert store.get(nodes[0].id).status == jobtable.Status.QUEUED


def test_a_refused_retry_says_so_and_the_job_page_names_the_blocking_dependency(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("blocked")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    wf.enqueue(store)
    store.cancel(a.id)
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        token = csrf_token(client.get(f"/jobs/{b.id}").text)
        reply = client.post(f"/jobs/{b.id}/retry", {"csrf": token})
        assert reply.status == 303, reply.text
        assert reply.headers["location"] == f"/jobs/{b.id}?notice=retry-blocked"
        after = client.get(reply.headers["location"]).text
    assert "A dependency it needs failed, was cancelled or was deleted: nothing changed." in after
    assert f"its dependencies block it: dependency {a.id} cancelled." in after
    assert store.get(b.id).status is jobtable.Status.CANCELLED


def test_a_workflow_waiting_for_a_slot_says_so_until_admitted(store: jobtable.Store) -> None:
    flows = [jobtable.Workflow("limited", concurrency=1) for _ in range(2)]
    for wf in flows:
        wf.add(ping, 1)
        wf.enqueue(store)
    assert [store.workflow(wf.id).waiting for wf in flows] == [False, True]
    with serve(jobtable.dashboard(store)) as base:
        waiting = Client(base).get(f"/workflows/{flows[1].id}")
        running = Client(base).get(f"/workflows/{flows[0].id}")
        assert "waiting for a slot" in waiting.text
        assert "waiting for a slot" not in running.text
        store.cancel_workflow(flows[0].id)
        admitted = Client(base).get(f"/workflows/{flows[1].id}")
    assert "waiting for a slot" not in admitted.text
    assert not store.workflow(flows[1].id).waiting
