"""The dashboard's workflow page: a workflow's jobs laid out by depth, and its cancel.

``GET /workflows/{id}`` reads the workflow's graph (``Store.aworkflow``) and
shows it as layers: a job's layer is one more than its deepest dependency's,
so every job stands below all it waits for. It is plain HTML that wraps to
any width. ``POST /workflows/{id}/cancel`` goes through ``Dashboard.guarded``
(CSRF, read-only mode) and calls ``Store.acancel_workflow``.
"""

import functools
from collections.abc import Mapping
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from jobtable._dashboard.queues import Pages
from jobtable._errors import JobNotFound
from jobtable._job import Status
from jobtable._operator.workflows import WorkflowGraph, WorkflowNode

UNKNOWN = "No workflow has this id (its jobs may have been deleted)."


def layers(graph: WorkflowGraph) -> list[list[WorkflowNode]]:
    """The graph's jobs by depth, each layer in enqueue order.

    A job with no dependency in the graph is at depth 0; any other is one
    below its deepest dependency. Jobs on a cycle, which a workflow cannot
    store, would end in one last layer rather than be lost.
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
    found: list[list[WorkflowNode]] = [[] for _ in range(1 + max(depth.values(), default=-1))]
    for node in graph.jobs:
        found[depth[node.id]].append(node)
    return found


async def page(dash: Pages, request: Request) -> Response:
    """The workflow page; a 404 page for an unknown id."""
    try:
        graph = await dash.store.aworkflow(request.path_params["workflow_id"])
    except JobNotFound:
        return dash.problem(request, 404, UNKNOWN)
    counts = {status: 0 for status in Status}
    for node in graph.jobs:
        counts[node.status] += 1
    number = {node.id: n for n, node in enumerate(graph.jobs, start=1)}
    return dash.render(
        request, "workflow.html", workflow=graph, counts=counts, layers=layers(graph), number=number
    )


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


def routes(dash: Pages) -> list[Route]:
    """The workflow page's routes over dash."""
    return [
        Route("/workflows/{workflow_id}", functools.partial(page, dash), name="workflow"),
        Route(
            "/workflows/{workflow_id}/cancel",
            functools.partial(cancel, dash),
            methods=["POST"],
            name="workflow_cancel",
        ),
    ]
