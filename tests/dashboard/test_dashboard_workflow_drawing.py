"""The workflow page's graph with its edges, its timeline, its pages, and when it offers cancel.

Over HTTP on every engine. A 10,000-job workflow is shown a page of jobs at a
time; the page stays small (it was one page of 3 MB before paging).
"""

import pathlib
import re
import sys

import jobtable
from jobtable.testing import drain

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "dashboard"))
from dashboard_server import Client, serve

step = jobtable.Kind("step", int, int)


def diamond(store: jobtable.Store) -> tuple[str, list[str]]:
    """a, then b and c after a, then d after both: four edges."""
    wf = jobtable.Workflow("diamond")
    a = wf.add(step, 1)
    b, c = wf.add(step, 2, after=[a]), wf.add(step, 3, after=[a])
    d = wf.add(step, 4, after=[b, c])
    return wf.enqueue(store), [a.id, b.id, c.id, d.id]


def runner_of(store: jobtable.Store) -> jobtable.Runner:
    runner = jobtable.Runner(store)

    @runner.handler(step)
    def handle(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    return runner


def test_the_graph_draws_each_job_and_an_edge_per_dependency(store: jobtable.Store) -> None:
    workflow_id, ids = diamond(store)
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get(f"/workflows/{workflow_id}").text
    [graph] = re.findall(r'<svg class="workflow-graph".*?</svg>', page, re.DOTALL)
    assert [re.search(rf'data-job="{i}"', graph) is not None for i in ids] == [True] * 4
    assert len(re.findall(r'<line class="edge', graph)) == 4
    assert "<script" not in graph


async def test_the_timeline_shows_when_each_job_was_queued_started_and_ended(
    store: jobtable.Store,
) -> None:
    workflow_id, _ = diamond(store)
    await drain(runner_of(store))
    graph = store.workflow(workflow_id)
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get(f"/workflows/{workflow_id}").text
    [timeline] = re.findall(r'<svg class="workflow-timeline".*?</svg>', page, re.DOTALL)
    assert len(re.findall(r'<rect class="run"', timeline)) == 4
    for node in graph.jobs:
        assert node.created_at is not None
        assert node.started_at is not None
        assert node.finished_at is not None
        assert node.created_at <= node.started_at <= node.finished_at
        assert f"started {node.started_at:%Y-%m-%d %H:%M:%S}" in timeline


async def test_cancel_workflow_is_offered_only_while_the_workflow_can_change(
    store: jobtable.Store,
) -> None:
    workflow_id, _ = diamond(store)
    with serve(jobtable.dashboard(store)) as base:
        assert "Cancel workflow" in Client(base).get(f"/workflows/{workflow_id}").text
        await drain(runner_of(store))
        assert "Cancel workflow" not in Client(base).get(f"/workflows/{workflow_id}").text


def test_a_10000_job_workflow_is_shown_a_page_of_jobs_at_a_time(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("big")
    root = wf.add(step, 0)
    middle = [wf.add(step, n, after=[root]) for n in range(9998)]
    last = wf.add(step, -1, after=middle[-3:])
    workflow_id = wf.enqueue(store)
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        first = client.get(f"/workflows/{workflow_id}")
        final = client.get(f"/workflows/{workflow_id}?page=50")
        beyond = client.get(f"/workflows/{workflow_id}?page=999")
    assert len(first.text.encode()) < 400_000  # the whole workflow on one page: 3 MB
    assert "10000 jobs" in first.text
    assert "page 1 of 50" in first.text
    assert 'href="?page=2" rel="next"' in first.text
    assert f'data-job="{last.id}"' not in first.text
    assert "page 50 of 50" in final.text
    assert f'data-job="{last.id}"' in final.text
    assert f'href="?page=1#job-{root.id}">#1<' in final.text  # a dependency on another page
    assert "page 50 of 50" in beyond.text
    assert f"/workflows/{workflow_id}/live/events?page=50" in final.text
