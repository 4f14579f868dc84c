"""The dashboard's Starlette app: its routes, page handlers and actions.

Every page is rendered on the server from the store's public operations,
through Jinja2 with autoescaping on, so any stored text (payloads, results,
messages, kind and queue names) reaches the browser escaped. Links are built
from the ASGI root_path, so they stay under whatever path the app is mounted
at. The assets (templates, CSS, the small refresh script) ship inside the
package, in this folder's ``templates`` and ``static``.
"""

import asyncio
import functools
import pathlib
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from jobtable._dashboard import bulk as bulk
from jobtable._dashboard import queue_page, workflow_pages
from jobtable._dashboard import views as views
from jobtable._dashboard.live import CSRF_MARK, Broadcast, Frame, event_stream
from jobtable._dashboard.security import SECURITY_HEADERS, Authenticate, Csrf
from jobtable._dashboard.views import throughput_chart
from jobtable._errors import JobNotFound
from jobtable._job import Status
from jobtable._operator.models import DeleteResult
from jobtable._signal import APPROVAL, Approval
from jobtable._store import Store
from jobtable._wait.waiters import waiters_of

ASSETS = pathlib.Path(__file__).parent
MAX_FORM_BYTES = 16 * 1024

SEARCH_SCAN = 10_000
"""The most recent jobs a payload search reads: its cost stays bounded at any table size."""


class Form(dict[str, str]):
    """A POST's form fields (the last value of each), and every value of its ``id`` fields."""

    ids: list[str]


Action = Callable[[Form], Awaitable[Response]]


class Dashboard:
    """The pages and actions over one store; ``routes`` is what Starlette serves."""

    def __init__(
        self,
        store: Store,
        *,
        read_only: bool,
        secret: str | bytes | None,
        refresh: float,
        lease: float,
    ) -> None:
        self.store = store
        self.read_only = read_only
        self.csrf = Csrf(secret)
        self.refresh_ms = int(refresh * 1000)
        self.lease = lease
        self.env = views.environment(ASSETS / "templates")
        self.live = Broadcast(refresh)

    def render(
        self, request: Request, name: str, status_code: int = 200, **context: Any
    ) -> HTMLResponse:
        """The template name rendered for request, with the security headers and CSRF cookie."""
        token, fresh = self.csrf.token_for(request)
        base: str = request.scope.get("root_path", "")
        notice = views.NOTICES.get(request.query_params.get("notice", ""))
        if notice is not None:
            count = request.query_params.get("count", "")
            notice = notice.format(count=int(count) if count.isdigit() and len(count) < 10 else 0)
        html = self.fragment(base, name, csrf=token, notice=notice, **context)
        response = HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)
        if fresh:
            self.csrf.set_cookie(request, response, token)
        return response

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
        return self.env.get_template(name).render(
            base=base,
            csrf=csrf,
            read_only=self.read_only,
            refresh_ms=self.refresh_ms,
            notice=notice,
            **context,
        )

    def problem(self, request: Request, status_code: int, message: str) -> HTMLResponse:
        """An error page saying message."""
        return self.render(request, "problem.html", status_code, message=message)

    async def _overview_data(self) -> dict[str, Any]:
        # Three independent reads: on SQLite each takes its own reader connection.
        stats, runners, points, health = await asyncio.gather(
            self.store.astats(),
            self.store.arunners(lease=self.lease),
            self.store.athroughput(),
            self.store.ahealth(lease=self.lease),
        )
        totals = {status: 0 for status in Status}
        for queue in stats.queues:
            for status, jobs in queue.counts.items():
                totals[status] += jobs
        return {
            "stats": stats,
            "totals": totals,
            "runners": runners,
            "health": health,
            "chart": throughput_chart(points, stats.at),
        }

    async def overview(self, request: Request) -> Response:
        """The overview page: counts, throughput and runners."""
        return self.render(request, "overview.html", **await self._overview_data())

    async def overview_live(self, request: Request) -> Response:
        """The overview's live part, which the page fetches again every refresh."""
        return self.render(request, "_overview_live.html", **await self._overview_data())

    async def overview_events(self, request: Request) -> Response:
        """The overview's live part as a stream of server-sent events."""
        base: str = request.scope.get("root_path", "")

        async def render() -> Frame:
            return Frame(self.fragment(base, "_overview_live.html", **await self._overview_data()))

        return event_stream(request, self.csrf, self.live, f"overview {base}", render)

    async def jobs(self, request: Request) -> Response:
        """The job list: filtered, newest first, a keyset page at a time."""
        try:
            filters = views.parse_filters(request.query_params)
        except views.BadFilter as err:
            return self.problem(request, 400, str(err))
        records, kinds, queues, alive = await asyncio.gather(
            self.store.alist_jobs(
                status=filters.status,
                kind=filters.kind,
                queue=filters.queue,
                tag=filters.tag,
                before=filters.before,
                limit=filters.limit + 1,
            ),
            self.store.akinds(),
            self.store.aqueue_names(),
            self._alive(),
        )
        page = records[: filters.limit]
        older = page[-1].seq if len(records) > filters.limit else None
        return self.render(
            request,
            "jobs.html",
            filters=filters,
            jobs=page,
            older=older,
            kinds=views.choices(kinds, filters.kind),
            queues=views.choices(queues, filters.queue),
            states={job.id: views.state(job, alive, self.store.clock()) for job in page},
        )

    async def _alive(self) -> frozenset[str]:
        runners = await self.store.arunners(lease=self.lease)
        return frozenset(runner.name for runner in runners if runner.alive)

    async def search(self, request: Request) -> Response:
        """Opens the job whose id is the text, else lists the recent jobs whose payload holds it."""
        text = request.query_params.get("q", "").strip()
        if not text:
            return self.render(request, "search.html", text="", jobs=[], scan=SEARCH_SCAN)
        if len(text) > 200 or views.unstorable(text):
            return self.problem(request, 400, "q: search for 1 to 200 storable characters.")
        try:
            record = await self.store.ainspect(text)
        except JobNotFound:
            pass
        else:
            base = request.scope.get("root_path", "")
            return RedirectResponse(f"{base}/jobs/{quote(record.id, safe='')}", status_code=303)
        found, alive = await asyncio.gather(
            self.store.asearch_payloads(text, scan=SEARCH_SCAN, limit=views.PAGE_SIZE),
            self._alive(),
        )
        states = {job.id: views.state(job, alive, self.store.clock()) for job in found}
        return self.render(
            request,
            "search.html",
            text=text,
            jobs=found,
            scan=SEARCH_SCAN,
            states=states,
            limit=views.PAGE_SIZE,
        )

    async def kinds(self, request: Request) -> Response:
        """The kinds page: each kind's last hour (throughput, failure rate, wait and run times)."""
        report = await self.store.akind_figures()
        return self.render(request, "kinds.html", report=report)

    async def _record(self, job_id: str) -> dict[str, Any]:
        """The job page's context; raises JobNotFound."""
        record, alive, awaits = await asyncio.gather(
            self.store.ainspect(job_id), self._alive(), self.store.asignal_wait(job_id)
        )
        return {
            "job": record,
            "awaits": awaits,
            "approval": awaits is not None
            and (awaits.signal, awaits.key)
            == (
                APPROVAL.name,
                job_id,
            ),
            "timeline": views.timeline(record),
            "final": views.final(record),
            "state": views.state(record, alive, self.store.clock()),
        }

    async def _record_page(self, request: Request, name: str) -> Response:
        try:
            context = await self._record(request.path_params["job_id"])
        except JobNotFound:
            return self.problem(request, 404, "No job has this id (it may have been deleted).")
        response = self.render(request, name, **context)
        if context["final"]:
            response.headers["x-jobtable-final"] = "1"
        return response

    async def job_events(self, request: Request) -> Response:
        """The job page's live part as a stream of server-sent events, until the job ends."""
        base: str = request.scope.get("root_path", "")
        job_id: str = request.path_params["job_id"]
        try:
            await self.store.ainspect(job_id)
        except JobNotFound:
            return self.problem(request, 404, "No job has this id (it may have been deleted).")

        async def render() -> Frame:
            try:
                context = await self._record(job_id)
            except JobNotFound:
                return Frame("<p>This job has been deleted.</p>", final=True)
            return Frame(self.fragment(base, "_job_live.html", **context), context["final"])

        def subscribe(wake: Callable[[], None]) -> Callable[[], None]:
            # The process's one listener for the store, as Kind.stream's: a
            # publish or an end renders the part at once, not at the next tick.
            waiters = waiters_of(self.store, self.store.engine)
            waiters.watch(job_id, wake)
            return lambda: waiters.unwatch(job_id, wake)

        key = f"job {job_id} {base}"
        return event_stream(request, self.csrf, self.live, key, render, subscribe)

    async def job(self, request: Request) -> Response:
        """One job's page: its record, payload, result, errors and timeline."""
        return await self._record_page(request, "job.html")

    async def job_live(self, request: Request) -> Response:
        """The job page's live part."""
        return await self._record_page(request, "_job_live.html")

    async def _form(self, request: Request) -> Form | None:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        length = request.headers.get("content-length", "0")
        form = Form()
        form.ids = []
        if not length.isdigit() or int(length) > MAX_FORM_BYTES:
            return None
        body = await request.body()
        if kind != "application/x-www-form-urlencoded" or len(body) > MAX_FORM_BYTES:
            return form
        pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        form.update(pairs)
        form.ids = [value for name, value in pairs if name == "id"]
        return form

    async def guarded(self, request: Request, action: Action) -> Response:
        """Runs action with the POST's form once the read-only and CSRF checks pass."""
        if self.read_only:
            return self.problem(request, 403, "This dashboard is read-only.")
        form = await self._form(request)
        if form is None:
            return self.problem(request, 413, "The form is too large.")
        refusal = self.csrf.refusal(request, form)
        if refusal is not None:
            return self.problem(request, 403, f"Refused: {refusal}.")
        try:
            return await action(form)
        except JobNotFound:
            return self.problem(request, 404, "No job has this id (it may have been deleted).")

    def _to_job(self, request: Request, job_id: str, notice: str) -> Response:
        base = request.scope.get("root_path", "")
        target = f"{base}/jobs/{quote(job_id, safe='')}?notice={quote(notice)}"
        return RedirectResponse(target, status_code=303)

    async def job_action(self, request: Request) -> Response:
        """POST: cancels, retries (failed or cancelled) or deletes (not running) the job.

        approve and reject send ``APPROVAL`` under the job's id to a job that
        waits for it; 409 for one that does not.
        """
        job_id: str = request.path_params["job_id"]
        action: str = request.path_params["action"]
        if action not in ("cancel", "retry", "delete", "approve", "reject"):
            return self.problem(request, 404, "No such action.")

        async def act(form: dict[str, str]) -> Response:
            if action in ("approve", "reject"):
                awaits = await self.store.asignal_wait(job_id)
                if awaits is None or (awaits.signal, awaits.key) != (APPROVAL.name, job_id):
                    return self.problem(request, 409, "This job does not wait for an approval.")
                await self.store.asignal(APPROVAL, job_id, Approval(approved=action == "approve"))
                return self._to_job(request, job_id, f"{action}-sent")
            if action == "cancel":
                result: str = await self.store.acancel(job_id)
            elif action == "retry":
                result = await self.store.aretry(job_id)
            else:
                result = await self.store.adelete(job_id)
                if result == DeleteResult.DELETED:
                    base = request.scope.get("root_path", "")
                    return RedirectResponse(f"{base}/jobs?notice=delete-{result}", 303)
            return self._to_job(request, job_id, f"{action}-{result}")

        return await self.guarded(request, act)

    async def retry_failed(self, request: Request) -> Response:
        """POST: queues again every failed job matching the form's kind and queue."""

        async def act(form: dict[str, str]) -> Response:
            try:
                filters = views.parse_filters(
                    {"kind": form.get("kind", ""), "queue": form.get("queue", "")}
                )
            except views.BadFilter as err:
                return self.problem(request, 400, str(err))
            count = await self.store.aretry_failed(kind=filters.kind, queue=filters.queue)
            base = request.scope.get("root_path", "")
            query = filters.query(status="queued", notice="bulk-retry", count=count)
            return RedirectResponse(f"{base}/jobs?{query}", status_code=303)

        return await self.guarded(request, act)

    async def bulk(self, request: Request) -> Response:
        """POST: a bulk action; without ``confirm``, the page that asks to confirm it."""

        async def act(form: Form) -> Response:
            try:
                asked = bulk.parse(form, form.ids)
            except bulk.BadBulk as err:
                return self.problem(request, 400, f"Nothing was changed: {err}.")
            if form.get("confirm") != "yes":
                return self.render(request, "confirm.html", bulk=asked)
            count = await bulk.run(self.store, asked)
            notice = f"bulk-{asked.action}"
            if asked.action == "retry" and not asked.by_filter:
                notice = "bulk-retry-selected"
            base = request.scope.get("root_path", "")
            query = asked.filters.query(notice=notice, count=count)
            return RedirectResponse(f"{base}/jobs?{query}", status_code=303)

        return await self.guarded(request, act)

    def routes(self) -> list[Route | Mount]:
        """The app's routes."""
        return [
            Route("/", self.overview, name="overview"),
            Route("/live/overview", self.overview_live, name="overview_live"),
            Route("/live/overview/events", self.overview_events, name="overview_events"),
            Route("/jobs", self.jobs, name="jobs"),
            Route("/search", self.search, name="search"),
            Route("/kinds", self.kinds, name="kinds"),
            Route("/queues", functools.partial(queue_page.page, self), name="queues"),
            Route("/queues", functools.partial(queue_page.change, self), methods=["POST"]),
            Route("/bulk", self.bulk, methods=["POST"], name="bulk"),
            Route("/retry-failed", self.retry_failed, methods=["POST"], name="retry_failed"),
            *workflow_pages.routes(self),
            Route("/jobs/{job_id}", self.job, name="job"),
            Route("/jobs/{job_id}/live", self.job_live, name="job_live"),
            Route("/jobs/{job_id}/live/events", self.job_events, name="job_events"),
            Route("/jobs/{job_id}/{action}", self.job_action, methods=["POST"], name="action"),
            Mount("/static", StaticFiles(directory=ASSETS / "static"), name="static"),
        ]


def build_app(
    store: Store,
    *,
    read_only: bool,
    token: str | None,
    basic_auth: tuple[str, str] | None,
    secret: str | bytes | None,
    refresh: float,
    lease: float,
) -> ASGIApp:
    """The dashboard app; ``jobtable.dashboard`` checks the arguments and documents them."""
    pages = Dashboard(store, read_only=read_only, secret=secret, refresh=refresh, lease=lease)
    app: ASGIApp = Starlette(routes=pages.routes())
    if token is not None or basic_auth is not None:
        app = Authenticate(app, token=token, basic_auth=basic_auth)
    return app
