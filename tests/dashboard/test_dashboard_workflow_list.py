"""The dashboard's list of workflows and the workflow page's live part, over HTTP, both engines."""

import contextlib
import re

import pytest
from dashboard_server import Client, serve
from test_dashboard_live import events

import jobtable

ping = jobtable.Kind("ping", int, int)


def stored(store: jobtable.Store, name: str, jobs: int = 2) -> str:
    """Stores a chain of jobs workflow of name; returns its id."""
    wf = jobtable.Workflow(name)
    last = None
    for n in range(jobs):
        last = wf.add(ping, n, after=[] if last is None else [last])
    return wf.enqueue(store)


def rows(html: str) -> list[str]:
    """The workflow ids of the list's rows, in order."""
    return re.findall(r'<tr data-workflow="([^"]+)">', html)


def test_the_list_shows_each_workflow_with_its_link_counts_and_state(
    store: jobtable.Store,
) -> None:
    old = stored(store, "nightly <b>")
    new = stored(store, "hourly")
    store.cancel_workflow(old)
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get("/workflows")
    assert page.status == 200
    assert rows(page.text) == [new, old]
    assert f'<a href="/workflows/{old}">{old}</a>' in page.text
    assert "nightly &lt;b&gt;" in page.text
    old_row = page.text[page.text.index(f'data-workflow="{old}"') :]
    assert 'data-state="cancelled">cancelled<' in old_row.split("</tr>")[0]
    assert 'data-status="cancelled">2<' in old_row.split("</tr>")[0]
    new_row = page.text[page.text.index(f'data-workflow="{new}"') :].split("</tr>")[0]
    assert 'data-state="running">running<' in new_row
    assert 'data-status="queued">1<' in new_row
    assert 'data-status="pending">1<' in new_row
    assert '<a href="/workflows">Workflows</a>' in page.text  # in the nav


def test_the_list_filters_by_name_and_pages_older_workflows(store: jobtable.Store) -> None:
    ids = [stored(store, "a" if n % 2 else "b", jobs=1) for n in range(53)]
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        first = client.get("/workflows")
        older = re.search(r'<a rel="next" href="([^"]+)">', first.text)
        assert older is not None
        second = client.get(older.group(1).replace("&amp;", "&"))
        named = client.get("/workflows?name=a")
        nothing = client.get("/workflows?name=none")
    listed = rows(first.text) + rows(second.text)
    assert len(rows(first.text)) == 50
    assert sorted(listed) == sorted(ids)
    assert len(set(listed)) == 53
    assert 'rel="next"' not in second.text
    assert "« newest" in second.text
    assert sorted(rows(named.text)) == sorted(ids[1::2])
    assert 'value="a"' in named.text
    assert "No workflow matches." in nothing.text


def test_a_bad_filter_is_a_400_page(store: jobtable.Store) -> None:
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        long_name = client.get("/workflows?name=" + "x" * 201)
        nul = client.get("/workflows?name=a%00b")
    assert long_name.status == 400
    assert "name: at most 200 characters" in long_name.text
    assert nul.status == 400
    assert "it contains a NUL character" in nul.text


def test_the_workflow_page_is_live_until_no_job_is_left_to_change(store: jobtable.Store) -> None:
    running = stored(store, "running")
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get(f"/workflows/{running}")
        part = client.get(f"/workflows/{running}/live")
        store.cancel_workflow(running)
        ended = client.get(f"/workflows/{running}")
        ended_part = client.get(f"/workflows/{running}/live")
        unknown = client.get("/workflows/nope/live")
    assert f'data-events="/workflows/{running}/live/events"' in page.text
    assert f'data-refresh="/workflows/{running}/live"' in page.text
    assert part.status == 200
    assert "x-jobtable-final" not in part.headers
    assert 'data-status="pending">pending 1<' in part.text
    assert "<html" not in part.text  # the part alone
    assert "data-events=" not in ended.text
    assert ended_part.headers["x-jobtable-final"] == "1"
    assert 'data-status="cancelled">cancelled 2<' in ended_part.text
    assert unknown.status == 404


@pytest.mark.slow
def test_the_workflow_stream_sends_the_graph_as_jobs_change_and_ends_when_none_can(
    store: jobtable.Store,
) -> None:
    workflow_id = stored(store, "streamed")
    first_job = store.workflow(workflow_id).jobs[0].id
    with serve(jobtable.dashboard(store, refresh=0.05)) as base:
        stream = contextlib.closing(
            events(base, f"/workflows/{workflow_id}/live/events", limit=100)
        )
        with stream as frames:
            name, first = next(frames)
            assert name == "message"
            assert 'data-status="queued">queued 1<' in first
            store.cancel(first_job)
            received = list(frames)
        assert Client(base).get("/workflows/nope/live/events").status == 404
    assert received[-1][0] == "final"  # and the stream ended after it
    assert 'data-status="cancelled">cancelled 2<' in received[-1][1]
