"""The dashboard's workflow pages: the list, a workflow's jobs laid out by depth, its cancel.

``GET /workflows`` lists the workflows, newest first, a keyset page at a time
(``list_page``). ``GET
/workflows/{id}`` reads the workflow's graph (``Store.aworkflow``) and
shows one page of its jobs (``?page=``, ``PAGE`` jobs each, in enqueue
order) as a drawing with edges, a timeline, and layers: a job's layer is
one more than its deepest dependency's, so every job stands below all it
waits for (``drawing`` and ``timeline``, SVG geometry). The layers are plain HTML that wraps to
any width. Its counts and graph are the page's live part, kept up to date
as ``live`` keeps the job page's: ``/workflows/{id}/live/events`` streams
it (one render a tick however many watch), ``/workflows/{id}/live`` serves
it to the polling fallback, and once no job is pending, queued or running
the part is final. ``POST /workflows/{id}/cancel`` goes through
``Dashboard.guarded`` (CSRF, read-only mode) and calls
``Store.acancel_workflow``.
"""

import dataclasses
import datetime
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from jobtable._dashboard.live import CSRF_MARK, Broadcast, Frame, event_stream
from jobtable._dashboard.queue_page import Pages
from jobtable._dashboard.security import Csrf
from jobtable._dashboard.views import PAGE_SIZE
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
        Route("/workflows", functools.partial(list_page, dash), name="workflows"),
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


MAX_TEXT = 200
"""The longest name or id the page's query may hold."""


def _param(request: Request, key: str) -> str | None:
    """The query's key, None when absent or blank; ValueError naming a bad one."""
    value = request.query_params.get(key, "").strip()
    if len(value) > MAX_TEXT:
        raise ValueError(f"{key}: at most {MAX_TEXT} characters")
    return value or None


async def list_page(dash: Pages, request: Request) -> Response:
    """The list of workflows; a 400 page naming a bad filter."""
    try:
        name, before = _param(request, "name"), _param(request, "before")
        found = await dash.store.aworkflows(name=name, before=before, limit=PAGE_SIZE + 1)
    except (ValueError, TypeError) as err:
        return dash.problem(request, 400, f"{err}.")
    shown = found[:PAGE_SIZE]
    older = None
    if len(found) > PAGE_SIZE:
        older = urlencode({k: v for k, v in (("name", name), ("before", shown[-1].id)) if v})
    return dash.render(
        request,
        "workflows.html",
        workflows=shown,
        name_filter=name,
        before=before,
        newest=urlencode({"name": name}) if name else "",
        older=older,
        statuses=list(Status),
    )


PAGE = 200
"""The jobs a workflow page shows, in enqueue order."""

BOX_W, BOX_H, GAP_X, GAP_Y = 130, 30, 20, 34
ROW_H, LABEL_W, BAR_W = 18, 170, 520


@dataclasses.dataclass(frozen=True, slots=True)
class Box:
    """A job's box in the graph: its top-left corner, number, kind, status and id."""

    x: int
    y: int
    number: int
    kind: str
    status: str
    id: str


@dataclasses.dataclass(frozen=True, slots=True)
class Edge:
    """A line from a dependency's box (bottom middle) to its dependent's (top middle)."""

    x1: int
    y1: int
    x2: int
    y2: int
    status: str


@dataclasses.dataclass(frozen=True, slots=True)
class Drawing:
    """The graph of one page: its size, boxes and edges."""

    width: int
    height: int
    boxes: list[Box]
    edges: list[Edge]


def drawing(layers: Sequence[Sequence[WorkflowNode]], number: Mapping[str, int]) -> Drawing:
    """The graph of the page's jobs, laid out by layers (the page's, in depth order)."""
    place: dict[str, Box] = {}
    for row, layer in enumerate(layers):
        for column, node in enumerate(layer):
            x, y = GAP_X + column * (BOX_W + GAP_X), GAP_Y // 2 + row * (BOX_H + GAP_Y)
            place[node.id] = Box(x, y, number[node.id], node.kind, node.status, node.id)
    edges = [
        Edge(
            dep.x + BOX_W // 2,
            dep.y + BOX_H,
            box.x + BOX_W // 2,
            box.y,
            dep.status,
        )
        for layer in layers
        for node in layer
        for box in (place[node.id],)
        for dep in (place[d] for d in node.dependencies if d in place)
    ]
    widest = max((len(layer) for layer in layers), default=0)
    return Drawing(
        width=GAP_X + widest * (BOX_W + GAP_X),
        height=GAP_Y + len(layers) * (BOX_H + GAP_Y),
        boxes=list(place.values()),
        edges=edges,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Bar:
    """A job's timeline row: its number, kind, times, and the x and width of each span."""

    y: int
    number: int
    id: str
    kind: str
    status: str
    queued_at: datetime.datetime | None
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    wait: tuple[float, float]
    run: tuple[float, float] | None


@dataclasses.dataclass(frozen=True, slots=True)
class Timeline:
    """The timeline of one page: its size, its span's ends and a bar per job."""

    width: int
    height: int
    start: datetime.datetime | None
    end: datetime.datetime | None
    bars: list[Bar]


def timeline(
    jobs: Sequence[WorkflowNode], number: Mapping[str, int], now: datetime.datetime
) -> Timeline:
    """The page's jobs on one time axis, from the first enqueue to the last end (or now)."""
    times = [t for n in jobs for t in (n.created_at, n.started_at, n.finished_at) if t is not None]
    if not times:
        return Timeline(LABEL_W + BAR_W, 0, None, None, [])
    start = min(times)
    end = max(max(times), now if any(n.finished_at is None for n in jobs) else start)
    span = max((end - start).total_seconds(), 1e-6)

    def x(moment: datetime.datetime | None) -> float:
        at = end if moment is None else moment
        return LABEL_W + BAR_W * (at - start).total_seconds() / span

    bars = []
    for row, node in enumerate(jobs):
        queued = x(node.created_at or start)
        began = x(node.started_at if node.started_at is not None else node.finished_at)
        wait = (queued, max(began - queued, 1.0))
        run = None
        if node.started_at is not None:
            run = (began, max(x(node.finished_at) - began, 1.0))
        bars.append(
            Bar(
                row * ROW_H,
                number[node.id],
                node.id,
                node.kind,
                node.status,
                node.created_at,
                node.started_at,
                node.finished_at,
                wait,
                run,
            )
        )
    return Timeline(LABEL_W + BAR_W + 10, len(jobs) * ROW_H, start, end, bars)
