"""The dashboard's queues page: each queue's pause, limits and counts, and forms to change them.

Every change is a POST to ``/queues`` through ``Dashboard.guarded`` (so the
CSRF check and read-only mode apply as to every action), naming the queue
and the action: ``pause``, ``resume``, ``set`` (the limits in the form,
replacing the three, a blank field no limit, every field blank refused) or ``clear`` (back to the
code's declaration). It acts only on a queue the page lists, and a bad value
is refused with a page naming the field, nothing changed. It calls the
store's public operations, as the CLI does.
"""

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from jobtable._operator import flow_text
from jobtable._operator.models import RunnerInfo
from jobtable._operator.queues import QueueInfo
from jobtable._store import Store


class Pages(Protocol):
    """What the queues page needs of the dashboard (``jobtable._dashboard.app.Dashboard``)."""

    store: Store
    lease: float

    def render(
        self, request: Request, name: str, status_code: int = 200, **context: Any
    ) -> HTMLResponse:
        """The template name rendered for request."""
        ...

    def problem(self, request: Request, status_code: int, message: str) -> HTMLResponse:
        """An error page saying message."""
        ...

    async def guarded(
        self, request: Request, action: Callable[[Mapping[str, str]], Awaitable[Response]]
    ) -> Response:
        """Runs action with the POST's form once the read-only and CSRF checks pass."""
        ...


ACTIONS = ("pause", "resume", "set", "clear")


class BadChange(ValueError):
    """A queue form that cannot be acted on; its text says why."""


def row(queue: QueueInfo, runners: Sequence[RunnerInfo] = ()) -> dict[str, object]:
    """What the page shows of a queue, and the texts its limit form starts with.

    runners are the live runners holding a job of the queue: the queues a
    runner serves are not recorded, so an idle one is not shown.
    """
    return {
        "queue": queue,
        "runners": [r.name for r in runners if r.alive and queue.name in r.queues],
        "rate": flow_text.rate_text(queue),
        "by": flow_text.limits_by(queue),
        "rate_field": "" if queue.rate_limit is None else flow_text.rate_text(queue).split()[0],
    }


async def _every(store: Store) -> list[QueueInfo]:
    listed, names = await asyncio.gather(store.aqueues(), store.aqueue_names())
    return flow_text.every_queue(listed, names)


async def page(dash: Pages, request: Request) -> Response:
    """The queues page."""
    found, runners = await asyncio.gather(_every(dash.store), dash.store.arunners(lease=dash.lease))
    shown = [row(queue, runners) for queue in found]
    return dash.render(request, "queues.html", queues=shown)


async def _apply(store: Store, name: str, action: str, form: Mapping[str, str]) -> str:
    """Does action to queue name through the store; returns the notice's code."""
    if action == "pause":
        await store.apause(name)
    elif action == "resume":
        await store.aresume(name)
    elif action == "clear":
        await store.aclear_limits(name)
    else:
        try:
            concurrency = flow_text.parse_limit("concurrency", form.get("concurrency", ""))
            partition = flow_text.parse_limit("partition limit", form.get("partition_limit", ""))
            rate = flow_text.parse_rate("rate", form.get("rate", ""), "rate_per_key" in form)
        except ValueError as err:
            raise BadChange(str(err)) from None
        if concurrency is None and partition is None and rate is None:
            raise BadChange(
                "give a concurrency, a partition limit or a rate; "
                "Clear drops the operator's limits so the code's apply again"
            )
        await store.aset_limits(name, concurrency=concurrency, partition_limit=partition, rate=rate)
    return f"queue-{action}"


async def change(dash: Pages, request: Request) -> Response:
    """POST: pauses, resumes, sets or clears the limits of the form's queue."""

    async def act(form: Mapping[str, str]) -> Response:
        name = form.get("queue", "")
        action = form.get("action", "")
        if action not in ACTIONS:
            return dash.problem(request, 400, f"action: want one of {', '.join(ACTIONS)}.")
        known = {queue.name for queue in await _every(dash.store)}
        if name not in known:
            return dash.problem(
                request, 404, "No such queue (no jobs and no flow control): nothing was changed."
            )
        try:
            notice = await _apply(dash.store, name, action, form)
        except BadChange as err:
            return dash.problem(request, 400, f"Nothing was changed: {err}.")
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}/queues?notice={notice}", status_code=303)

    return await dash.guarded(request, act)
