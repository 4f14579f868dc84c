"""The dashboard's workflow pages: the list, a workflow's jobs laid out by depth, its cancel.

``GET /workflows`` lists the workflows (``workflow_list``). ``GET
/workflows/{id}`` reads the workflow's graph (``Store.aworkflow``) and
shows one page of its jobs (``?page=``, ``PAGE`` jobs each, in enqueue
order) as a drawing with edges, a timeline, and layers: a job's layer is
one more than its deepest dependency's, so every job stands below all it
waits for (``workflow_drawing``). The layers are plain HTML that wraps to
any width. Its counts and graph are the page's live part, kept up to date
as ``live`` keeps the job page's: ``/workflows/{id}/live/events`` streams
it (one render a tick however many watch), ``/workflows/{id}/live`` serves
it to the polling fallback, and once no job is pending, queued or running
the part is final. ``POST /workflows/{id}/cancel`` goes through
``Dashboard.guarded`` (CSRF, read-only mode) and calls
``Store.acancel_workflow``.
"""

import datetime
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from jobtable._dashboard import workflow_list
from jobtable._dashboard.live import CSRF_MARK, Broadcast, Frame, event_stream
from jobtable._dashboard.queues import Pages
from jobtable._dashboard.security import Csrf
from jobtable._dashboard.workflow_drawing import PAGE, drawing, timeline
from jobtable._errors import JobNotFound
from jobtable._job import Status
from jobtable._operator.workflows import WorkflowGraph, WorkflowNode, state_of

UNKNOWN = "No workflow has this id (its jobs may have been deleted)."


class LivePages(Pages, Protocol):
    """What the workflow pages need of the dashboard: its pages, and its live parts' broadcast."""

    csrf: Csrf
    live: Broadcast

    def fragment(
        self,
        base: str,
        name: str,
        *,
        csrf: str = CSRF_MARK,
        notice: str | None = None,
        **context: Any,
    ) -> str:
        """The template name rendered under base; a live part's CSRF token is left as a mark."""
        ...


def depths(graph: WorkflowGraph) -> dict[str, int]:
    """Each job's depth: 0 with no dependency in the graph, else one below its deepest one.

    Jobs on a cycle, which a workflow cannot store, would end in one last
    layer rather than be lost.
    """
    known = {node.id for node in graph.jobs}
    depth: dict[str, int] = {}
    left = list(graph.jobs)
    while left:
        waiting = []
        for node in left:
            deps = [dep for dep in node.dependencies if dep in known]
            if all(dep in depth for dep in deps):
                depth[node.id] = 1 + max((depth[dep] for dep in deps), default=-1)
            else:
                waiting.append(node)
        if len(waiting) == len(left):
            last = 1 + max(depth.values(), default=-1)
            depth.update((node.id, last) for node in waiting)
            break
        left = waiting
    return depth


def layers(
    graph: WorkflowGraph, jobs: Sequence[WorkflowNode]
) -> list[tuple[int, list[WorkflowNode]]]:
    """jobs (some of graph's) by depth in graph, shallowest first, each layer in enqueue order."""
    depth = depths(graph)
    found: dict[int, list[WorkflowNode]] = {}
    for node in jobs:
        found.setdefault(depth[node.id], []).append(node)
    return sorted(found.items())


def page_of(request: Request) -> int:
    """The page a request asks for (``?page=``, from 1); 1 when absent or not a number."""
    given = request.query_params.get("page", "1")
    return int(given) if given.isdigit() and 0 < len(given) < 7 else 1


def shown(graph: WorkflowGraph, page: int, now: datetime.datetime) -> dict[str, Any]:
    """What the workflow page shows of graph: counts, and one page of its jobs drawn.

    ``final``: no job is left to change by itself, so the page offers no cancel.
    """
    counts = {status: 0 for status in Status}
    for node in graph.jobs:
        counts[node.status] += 1
    pages = max(1, -(-len(graph.jobs) // PAGE))
    page = min(max(page, 1), pages)
    jobs = graph.jobs[(page - 1) * PAGE : page * PAGE]
    number = {node.id: n for n, node in enumerate(graph.jobs, start=1)}
    shown_layers = layers(graph, jobs)
    return {
        "workflow": graph,
        "counts": counts,
        "layers": shown_layers,
        "number": number,
        "page": page,
        "pages": pages,
        "page_size": PAGE,
        "drawing": drawing([layer for _, layer in shown_layers], number),
        "timeline": timeline(jobs, number, now),
        "final": state_of(counts) != "running",
    }


async def page(dash: Pages, request: Request, name: str = "workflow.html") -> Response:
    """The workflow page (or, by name, its live part alone); a 404 page for an unknown id."""
    try:
        graph = await dash.store.aworkflow(request.path_params["workflow_id"])
    except JobNotFound:
        return dash.problem(request, 404, UNKNOWN)
    context = shown(graph, page_of(request), dash.store.clock())
    response = dash.render(request, name, **context)
    if context["final"]:
        response.headers["x-jobtable-final"] = "1"
    return response


async def events(dash: LivePages, request: Request) -> Response:
    """The workflow page's live part as server-sent events, until no job is left to change."""
    base: str = request.scope.get("root_path", "")
    workflow_id: str = request.path_params["workflow_id"]
    number = page_of(request)
    try:
        await dash.store.aworkflow(workflow_id)
    except JobNotFound:
        return dash.problem(request, 404, UNKNOWN)

    async def render() -> Frame:
        graph = await dash.store.aworkflow(workflow_id)
        context = shown(graph, number, dash.store.clock())
        return Frame(dash.fragment(base, "_workflow_live.html", **context), context["final"])

    key = f"workflow {workflow_id} {number} {base}"
    return event_stream(request, dash.csrf, dash.live, key, render)


async def cancel(dash: Pages, request: Request) -> Response:
    """POST: cancels every unfinished job of the workflow, then shows its page again."""
    workflow_id: str = request.path_params["workflow_id"]

    async def act(form: Mapping[str, str]) -> Response:
        try:
            count = await dash.store.acancel_workflow(workflow_id)
        except JobNotFound:
            return dash.problem(request, 404, UNKNOWN)
        base = request.scope.get("root_path", "")
        target = f"{base}/workflows/{quote(workflow_id, safe='')}"
        return RedirectResponse(f"{target}?notice=workflow-cancel&count={count}", 303)

    return await dash.guarded(request, act)


def routes(dash: LivePages) -> list[Route]:
    """The workflow pages' routes over dash."""
    live_part = functools.partial(page, dash, name="_workflow_live.html")
    return [
        Route("/workflows", functools.partial(workflow_list.page, dash), name="workflows"),
        Route("/workflows/{workflow_id}", functools.partial(page, dash), name="workflow"),
        Route("/workflows/{workflow_id}/live", live_part, name="workflow_live"),
        Route(
            "/workflows/{workflow_id}/live/events",
            functools.partial(events, dash),
            name="workflow_events",
        ),
        Route(
            "/workflows/{workflow_id}/cancel",
            functools.partial(cancel, dash),
            methods=["POST"],
            name="workflow_cancel",
        ),
    ]
