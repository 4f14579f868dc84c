"""The dashboard's list of workflows: newest first, a keyset page at a time, filtered by name.

``GET /workflows`` reads a page of ``Store.aworkflows`` (each workflow's
name, id, creation time, its jobs counted by status and its state) and
links each to its page, ``/workflows/{id}``. ``name`` keeps one name's
workflows; ``before`` (the last id of the page before) turns the page.
"""

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from jobtable._dashboard.queues import Pages
from jobtable._dashboard.views import PAGE_SIZE
from jobtable._job import Status

MAX_TEXT = 200
"""The longest name or id the page's query may hold."""


def _param(request: Request, key: str) -> str | None:
    """The query's key, None when absent or blank; ValueError naming a bad one."""
    value = request.query_params.get(key, "").strip()
    if len(value) > MAX_TEXT:
        raise ValueError(f"{key}: at most {MAX_TEXT} characters")
    return value or None


async def page(dash: Pages, request: Request) -> Response:
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
