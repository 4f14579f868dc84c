"""The workflow page in a real browser: a 200-job workflow on a narrow screen.

Like the other browser tests, chromium comes from the system and Playwright
only drives it. The page must show every job, fit a 420 px wide screen
without the page scrolling sideways, open a job's page on a click, and
cancel the workflow once the operator confirms.
"""

import pytest
from dashboard_server import serve
from playwright.sync_api import Browser, expect
from test_dashboard_browser import NARROW, WAIT_MS, browser

import jobtable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

__all__ = ["browser"]  # the fixture, used by name

fetch = jobtable.Kind("fetch", int, int)
parse = jobtable.Kind("parse_report_section", int, int)
total = jobtable.Kind("total", int, int)


def two_hundred_jobs(store: jobtable.Store) -> tuple[str, list[str]]:
    """A workflow of 200 jobs: a root, 99 fetches after it, a parse after each, a total last."""
    wf = jobtable.Workflow("nightly reports")
    root = wf.add(fetch, 0)
    fetches = [wf.add(fetch, n, after=[root]) for n in range(99)]
    parses = [wf.add(parse, n, after=[f]) for n, f in enumerate(fetches)]
    last = wf.add(total, 0, after=parses)
    ids = [node.id for node in (root, *fetches, *parses, last)]
    return wf.enqueue(store), ids


def test_a_200_job_workflow_fits_a_narrow_screen_links_its_jobs_and_cancels(
    store: jobtable.Store, browser: Browser
) -> None:
    workflow_id, ids = two_hundred_jobs(store)
    context = browser.new_context(viewport={"width": NARROW, "height": 900})
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        with serve(jobtable.dashboard(store)) as base:
            page.goto(f"{base}/workflows/{workflow_id}")
            expect(page.locator("li.node")).to_have_count(200, timeout=WAIT_MS)
            expect(page.locator("section.layer")).to_have_count(4)
            expect(page.locator('#counts [data-status="pending"]')).to_have_text("pending 199")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= NARROW, f"the workflow page is {width} px wide"
            page.locator(f'li[data-job="{ids[150]}"] a').first.click()
            expect(page).to_have_url(f"{base}/jobs/{ids[150]}", timeout=WAIT_MS)
            expect(page.locator("#status")).to_contain_text("pending")
            page.locator("#workflow-link").click()
            expect(page).to_have_url(f"{base}/workflows/{workflow_id}", timeout=WAIT_MS)
            page.get_by_role("button", name="Cancel workflow").click()
            expect(page.locator(".notice")).to_contain_text("Workflow cancelled: 200")
            expect(page.locator('#counts [data-status="cancelled"]')).to_have_text("cancelled 200")
    finally:
        context.close()
    assert {store.get(job_id).status for job_id in ids} == {jobtable.Status.CANCELLED}


def test_the_list_links_to_the_graph_which_shows_a_job_s_new_status_without_a_reload(
    store: jobtable.Store, browser: Browser
) -> None:
    wf = jobtable.Workflow("live reports")
    first = wf.add(fetch, 1)
    second = wf.add(total, 2, after=[first])
    workflow_id = wf.enqueue(store)
    context = browser.new_context(viewport={"width": NARROW, "height": 900})
    page = context.new_page()
    try:
        with serve(jobtable.dashboard(store, refresh=0.2)) as base:
            page.goto(f"{base}/")
            page.get_by_role("link", name="Workflows").click()
            expect(page).to_have_url(f"{base}/workflows", timeout=WAIT_MS)
            row = page.locator(f'tr[data-workflow="{workflow_id}"]')
            expect(row.locator("[data-state]")).to_have_text("running")
            row.get_by_role("link", name=workflow_id).click()
            expect(page).to_have_url(f"{base}/workflows/{workflow_id}", timeout=WAIT_MS)
            node = page.locator(f'li[data-job="{second.id}"] span.status')
            expect(node).to_have_text("pending")
            page.evaluate("window.notReloaded = true")
            store.cancel(first.id)  # and second, which needed it
            expect(node).to_have_text("cancelled", timeout=WAIT_MS)
            expect(page.locator('#counts [data-status="cancelled"]')).to_have_text("cancelled 2")
            assert page.evaluate("window.notReloaded === true"), "the page was reloaded"
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= NARROW, f"the workflow page is {width} px wide"
    finally:
        context.close()
