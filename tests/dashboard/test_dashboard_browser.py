"""The dashboard in a real browser: chromium, driven by Playwright, against a real uvicorn.

Each test enqueues jobs of several kinds for a runner running beside the
server, then uses the pages as an operator would: it watches the counts
change without reloading, opens a failed job, cancels a running one,
retries a failed one, and checks that a POST without the CSRF token is
refused. The overview and job page screenshots come from these runs: they
are written to the test's folder, and to docs/ (which the README and the
dashboard guide show) when JOBTABLE_SCREENSHOTS is set, as ``make
screenshots`` does. Every page is also opened on a 420 px wide screen, which
it must fit without scrolling sideways.

chromium comes from the system (``apt-get install -y chromium``); Playwright
only drives it (never ``playwright install``).
"""

import asyncio
import datetime
import os
import pathlib
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from dashboard_server import serve, wait_for
from playwright.sync_api import Browser, Page, expect, sync_playwright
from pydantic import BaseModel
from seam import claim

import jobtable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PLANTED = "planted-secret-b81e40"
WAIT_MS = 60_000
"""How long a page may take to show what a test waits for: generous, the machine is loaded."""


class Photo(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int
    url: str | None = None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        message = "no chromium on PATH: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.on("dialog", lambda dialog: dialog.accept())
    yield opened
    context.close()


class Workload:
    """A runner with four kinds: quick async and sync ones, a leaky one, one that waits."""

    def __init__(self, store: jobtable.Store) -> None:
        self.runner = jobtable.Runner(store, workers=4, poll_interval=0.05, cancel_check=0.05)
        self.healed = threading.Event()
        runner = self.runner

        async def thumbnail(ctx: jobtable.JobContext[Progress], payload: Photo) -> Progress:
            await ctx.apublish(Progress(done=1, total=2))
            return Progress(done=2, total=2, url=f"/thumbs/{payload.photo_id}")

        def report(
            ctx: jobtable.JobContext[dict[str, Any]], payload: dict[str, Any]
        ) -> dict[str, Any]:
            return {"rows": len(payload)}

        def leak(
            ctx: jobtable.JobContext[dict[str, Any]], payload: dict[str, Any]
        ) -> dict[str, Any]:
            raise RuntimeError(f"GET https://api.example/v1?token={PLANTED} returned 500")

        def flaky(
            ctx: jobtable.JobContext[dict[str, Any]], payload: dict[str, Any]
        ) -> dict[str, Any]:
            if not self.healed.is_set():
                raise jobtable.Failure("upstream not ready")
            return {"ok": True}

        async def sleepy(
            ctx: jobtable.JobContext[dict[str, Any]], payload: dict[str, Any]
        ) -> dict[str, Any]:
            await asyncio.sleep(3600)
            return {}

        self.thumbnail = runner.register("thumbnail", thumbnail)
        self.report = runner.register("report", report)
        self.leak = runner.register("leak", leak)
        self.flaky = runner.register("flaky", flaky)
        self.sleepy = runner.register("sleepy", sleepy)


def status_of(store: jobtable.Store, job_id: str) -> jobtable.Status:
    return store.get(job_id).status


def screenshot(page: Page, tmp_path: pathlib.Path, name: str) -> None:
    """Saves a full-page screenshot as name in tmp_path, and in docs/ when asked to."""
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes().startswith(b"\x89PNG")
    if os.environ.get("JOBTABLE_SCREENSHOTS"):
        DOCS.mkdir(exist_ok=True)
        shutil.copyfile(shot, DOCS / name)


def test_the_overview_counts_change_live_as_jobs_of_several_kinds_run(
    store: jobtable.Store, page: Page, tmp_path: pathlib.Path
) -> None:
    work = Workload(store)
    with serve(jobtable.dashboard(store, refresh=0.3), work.runner) as base:
        page.goto(f"{base}/")
        succeeded = page.locator('tfoot td[data-status="succeeded"]')
        expect(succeeded).to_have_text("0")
        page.evaluate("window.notReloaded = true")
        for n in range(3):
            work.thumbnail.enqueue(Photo(photo_id=f"p{n}", size=256))
        for n in range(2):
            work.report.enqueue({"n": n})
        work.leak.enqueue({})
        expect(succeeded).to_have_text("5", timeout=WAIT_MS)
        expect(page.locator('tfoot td[data-status="failed"]')).to_have_text("1", timeout=WAIT_MS)
        assert page.evaluate("window.notReloaded") is True
        expect(page.locator("svg.chart rect.succeeded").first).to_be_visible()
        expect(page.locator("table.runners td.alive")).to_have_count(1)
        # The counts came as server-sent events, not polls.
        expect(page.locator("#live")).to_have_attribute("data-live", "events")
        assert PLANTED not in page.content()
        if store.engine.__class__.__name__ == "SQLiteEngine":
            screenshot(page, tmp_path, "dashboard-overview.png")


def test_where_no_stream_gets_through_the_page_polls_instead(
    store: jobtable.Store, page: Page
) -> None:
    work = Workload(store)
    page.route("**/events", lambda route: route.abort())  # a proxy that refuses streams
    with serve(jobtable.dashboard(store, refresh=0.3), work.runner) as base:
        page.goto(f"{base}/")
        succeeded = page.locator('tfoot td[data-status="succeeded"]')
        expect(succeeded).to_have_text("0")
        work.report.enqueue({"n": 1})
        expect(succeeded).to_have_text("1", timeout=WAIT_MS)
        assert page.locator("#live").get_attribute("data-live") is None


def test_a_failed_jobs_page_shows_the_internal_message_only(
    store: jobtable.Store, page: Page, tmp_path: pathlib.Path
) -> None:
    work = Workload(store)
    job_id = work.leak.enqueue({"account": "a-17"})
    with serve(jobtable.dashboard(store), work.runner) as base:
        wait_for(lambda: status_of(store, job_id) == jobtable.Status.FAILED)
        page.goto(f"{base}/jobs?status=failed")
        page.get_by_role("link", name=job_id).click()
        expect(page.locator("#status")).to_have_text("failed")
        expect(page.locator("#error")).to_have_text(jobtable.MESSAGE_INTERNAL)
        expect(page.locator("table.errors td.error")).to_have_text([jobtable.MESSAGE_INTERNAL])
        expect(page.locator("pre.payload")).to_contain_text('"account": "a-17"')
        assert PLANTED not in page.content()
        for path in ("/", "/jobs", f"/jobs/{job_id}/live"):
            assert PLANTED not in page.request.get(f"{base}{path}").text()
        if store.engine.__class__.__name__ == "SQLiteEngine":
            screenshot(page, tmp_path, "dashboard-job.png")


def test_cancelling_a_running_job_ends_it_cancelled(store: jobtable.Store, page: Page) -> None:
    work = Workload(store)
    job_id = work.sleepy.enqueue({})
    with serve(jobtable.dashboard(store, refresh=0.3), work.runner) as base:
        wait_for(lambda: status_of(store, job_id) == jobtable.Status.RUNNING)
        page.goto(f"{base}/jobs/{job_id}")
        expect(page.locator("#status")).to_have_text("running")
        page.get_by_role("button", name="Cancel").click()
        expect(page.locator(".notice")).to_contain_text("Cancel requested")
        expect(page.locator("#status")).to_have_text("cancelled", timeout=WAIT_MS)
    assert status_of(store, job_id) == jobtable.Status.CANCELLED


def test_retrying_a_failed_job_runs_it_again(store: jobtable.Store, page: Page) -> None:
    work = Workload(store)
    job_id = work.flaky.enqueue({})
    with serve(jobtable.dashboard(store, refresh=0.3), work.runner) as base:
        wait_for(lambda: status_of(store, job_id) == jobtable.Status.FAILED)
        page.goto(f"{base}/jobs/{job_id}")
        expect(page.locator("#error")).to_have_text("upstream not ready")
        work.healed.set()
        page.get_by_role("button", name="Retry").click()
        expect(page.locator(".notice")).to_contain_text("Queued again")
        expect(page.locator("#status")).to_have_text("succeeded", timeout=WAIT_MS)
        expect(page.locator("pre.result")).to_contain_text('"ok": true')
        expect(page.locator("table.errors td.error")).to_have_text(["upstream not ready"])


def test_bulk_retry_queues_every_failed_job_of_the_filter(
    store: jobtable.Store, page: Page
) -> None:
    work = Workload(store)
    ids = [work.flaky.enqueue({"n": n}) for n in range(3)]
    other = work.leak.enqueue({})
    with serve(jobtable.dashboard(store), work.runner) as base:
        wait_for(lambda: all(status_of(store, i) == jobtable.Status.FAILED for i in [*ids, other]))
        work.healed.set()
        page.goto(f"{base}/jobs?status=failed&kind=flaky")
        page.locator("#bulk-filter").get_by_role("button", name="Retry all failed").click()
        expect(page.locator("#question")).to_contain_text("matching status failed, kind flaky")
        page.get_by_role("button", name="Yes, retry").click()
        expect(page.locator(".notice")).to_have_text("Failed jobs queued again: 3.")
        wait_for(lambda: all(status_of(store, i) == jobtable.Status.SUCCEEDED for i in ids))
    assert status_of(store, other) == jobtable.Status.FAILED


def test_a_post_without_the_csrf_token_is_refused(store: jobtable.Store, page: Page) -> None:
    work = Workload(store)
    job_id = work.sleepy.enqueue({})
    with serve(jobtable.dashboard(store), work.runner) as base:
        wait_for(lambda: status_of(store, job_id) == jobtable.Status.RUNNING)
        page.goto(f"{base}/jobs/{job_id}")
        page.evaluate("document.querySelectorAll('input[name=csrf]').forEach(i => i.remove())")
        page.get_by_role("button", name="Cancel").click()
        expect(page.locator(".problem")).to_contain_text("CSRF token is missing")
        direct = page.request.post(f"{base}/jobs/{job_id}/cancel", form={"action": "cancel"})
        assert direct.status == 403
        assert status_of(store, job_id) == jobtable.Status.RUNNING
        assert not store.inspect(job_id).cancel_requested


PAGES_WIDE = 1200
NARROW = 420


def operator_jobs(store: jobtable.Store, work: Workload) -> dict[str, Any]:
    """Jobs in every state the operator pages show: done, failed, running, scheduled."""
    later = datetime.timedelta(hours=2)
    jobs: dict[str, Any] = {
        "thumbs": [work.thumbnail.enqueue(Photo(photo_id=f"p{n}", size=256)) for n in range(3)],
        "reports": [work.report.enqueue({"customer": f"Globex {n}"}) for n in range(2)],
        "leak": work.leak.enqueue({"account": "a-17"}),
        "sleepy": work.sleepy.enqueue({}),
        "scheduled": [
            work.report.enqueue({"customer": f"Initech {n}"}, delay=later) for n in range(3)
        ],
    }
    return jobs


def settled(store: jobtable.Store, jobs: dict[str, Any]) -> bool:
    done = [*jobs["thumbs"], *jobs["reports"], jobs["leak"]]
    return all(
        status_of(store, i) in (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED) for i in done
    ) and (status_of(store, jobs["sleepy"]) == jobtable.Status.RUNNING)


def test_every_page_fits_a_420px_wide_screen(
    store: jobtable.Store, browser: Browser, tmp_path: pathlib.Path
) -> None:
    work = Workload(store)
    jobs = operator_jobs(store, work)
    context = browser.new_context(viewport={"width": NARROW, "height": 900})
    page = context.new_page()
    try:
        with serve(jobtable.dashboard(store), work.runner) as base:
            wait_for(lambda: settled(store, jobs))
            paths = {
                "overview": "/",
                "jobs": "/jobs",
                "failed": "/jobs?status=failed",
                "kinds": "/kinds",
                "search": "/search?q=globex",
                "job": f"/jobs/{jobs['leak']}",
                "running job": f"/jobs/{jobs['sleepy']}",
                "queues": "/queues",
            }
            for name, path in paths.items():
                page.goto(f"{base}{path}")
                width = page.evaluate("document.documentElement.scrollWidth")
                assert width <= NARROW, f"{name} ({path}) is {width} px wide"
            page.goto(f"{base}/jobs")
            page.locator(f'input[name="id"][value="{jobs["scheduled"][0]}"]').check()
            page.locator("#bulk-selected").get_by_role("button", name="Delete").click()
            expect(page.locator("#question")).to_have_text("Delete these 1 selected jobs?")
            assert page.evaluate("document.documentElement.scrollWidth") <= NARROW
            page.goto(f"{base}/")
            if store.engine.__class__.__name__ == "SQLiteEngine":
                screenshot(page, tmp_path, "dashboard-narrow.png")
    finally:
        context.close()


def test_an_operator_filters_by_pick_list_selects_jobs_and_cancels_them_after_confirming(
    store: jobtable.Store, page: Page, tmp_path: pathlib.Path
) -> None:
    work = Workload(store)
    jobs = operator_jobs(store, work)
    sqlite = store.engine.__class__.__name__ == "SQLiteEngine"
    with serve(jobtable.dashboard(store), work.runner) as base:
        wait_for(lambda: settled(store, jobs))
        page.goto(f"{base}/jobs")
        if sqlite:
            screenshot(page, tmp_path, "dashboard-jobs.png")
        page.locator('select[name="kind"]').select_option("report")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("table.jobs tbody tr")).to_have_count(5)
        for job_id in jobs["scheduled"][:2]:
            row = page.locator(f'tr[data-id="{job_id}"]')
            expect(row.locator("td.status")).to_contain_text("scheduled for")
            row.locator('input[name="id"]').check()
        page.locator("#bulk-selected").get_by_role("button", name="Cancel").click()
        expect(page.locator("#question")).to_have_text("Cancel these 2 selected jobs?")
        if sqlite:
            screenshot(page, tmp_path, "dashboard-confirm.png")
        assert status_of(store, jobs["scheduled"][0]) == jobtable.Status.QUEUED
        page.get_by_role("button", name="Yes, cancel").click()
        expect(page.locator(".notice")).to_contain_text("Cancelled or asked to cancel: 2")
        expect(page.locator('select[name="kind"]')).to_have_value("report")
    statuses = [status_of(store, i) for i in jobs["scheduled"]]
    assert statuses == [
        jobtable.Status.CANCELLED,
        jobtable.Status.CANCELLED,
        jobtable.Status.QUEUED,
    ]


def test_search_opens_a_job_by_id_and_finds_payload_text(
    store: jobtable.Store, page: Page, tmp_path: pathlib.Path
) -> None:
    work = Workload(store)
    jobs = operator_jobs(store, work)
    with serve(jobtable.dashboard(store), work.runner) as base:
        wait_for(lambda: settled(store, jobs))
        page.goto(f"{base}/")
        box = page.get_by_role("searchbox", name="search jobs by id or payload text")
        box.fill(jobs["leak"])
        box.press("Enter")
        expect(page.locator("h1 code")).to_have_text(jobs["leak"])
        box.fill("GLOBEX")
        box.press("Enter")
        expect(page.locator("table.jobs tbody tr")).to_have_count(2)
        expect(page.locator("#search-bound")).to_contain_text("10,000 most recent jobs")
        if store.engine.__class__.__name__ == "SQLiteEngine":
            screenshot(page, tmp_path, "dashboard-search.png")


def test_the_kinds_page_shows_each_kinds_figures_and_the_job_page_a_dead_runners_hold(
    store: jobtable.Store, page: Page, tmp_path: pathlib.Path
) -> None:
    work = Workload(store)
    jobs = operator_jobs(store, work)
    with serve(jobtable.dashboard(store), work.runner) as base:
        wait_for(lambda: settled(store, jobs))
        page.goto(f"{base}/kinds")
        expect(page.locator('tr[data-kind="thumbnail"] td[data-figure="finished"]')).to_have_text(
            "3"
        )
        expect(page.locator('tr[data-kind="leak"] td[data-figure="failure-rate"]')).to_have_text(
            "100.0%"
        )
        if store.engine.__class__.__name__ == "SQLiteEngine":
            screenshot(page, tmp_path, "dashboard-kinds.png")
    # The server and its runner are gone (a stop records the jobs it ran
    # interrupted); a runner that crashed holds a job, and a job due now has
    # no live runner to run it.
    work.report.enqueue({"customer": "Hooli"})
    work.report.enqueue({"customer": "Pied Piper"})
    [held] = claim(store.engine, 1, runner="crashed")
    with serve(jobtable.dashboard(store, lease=0.001)) as base:
        page.goto(f"{base}/jobs/{held}")
        expect(page.locator("#state")).to_have_text("(held by a dead runner)")
        page.goto(f"{base}/")
        expect(page.locator('[data-alarm="dead-held"]')).to_be_visible()
        expect(page.locator('[data-alarm="no_live_runner"]').first).to_be_visible()
