"""The queues page in a real browser: an operator pauses a queue, limits it and clears the limit.

Like the other browser tests, chromium comes from the system and Playwright
only drives it. A runner beside the server runs the queue's jobs, so a job
enqueued while the queue is paused is seen held back, then run once resumed.
The queues screenshot (``docs/dashboard-queues.png``) comes from this run.
"""

import pathlib

import pytest
from dashboard_server import serve, wait_for
from playwright.sync_api import Browser, Locator, Page, expect
from test_dashboard_browser import NARROW, WAIT_MS, browser, page, screenshot

import jobtable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

__all__ = ["browser", "page"]  # the fixtures, used by name

mail = jobtable.Kind("mail", dict, dict, queue="email")


def mail_runner(store: jobtable.Store) -> jobtable.Runner:
    runner = jobtable.Runner(store, queues={"email": 2}, poll_interval=0.05)

    @runner.handler(mail)
    async def send(
        ctx: jobtable.JobContext[dict[str, str]], payload: dict[str, str]
    ) -> dict[str, bool]:
        return {"sent": True}

    return runner


def row(page: Page, queue: str, figure: str) -> Locator:
    return page.locator(f'tr[data-queue="{queue}"] td[data-figure="{figure}"]')


def test_an_operator_pauses_a_queue_sees_a_job_held_then_limits_and_clears_it(
    store: jobtable.Store, page: Page, tmp_path: pathlib.Path
) -> None:
    store.declare([jobtable.Queue("exports", concurrency=5)])
    first = mail.enqueue(store, {"to": "a@example.org"})
    with serve(jobtable.dashboard(store, refresh=0.3), mail_runner(store)) as base:
        wait_for(lambda: store.get(first).status == jobtable.Status.SUCCEEDED)
        page.goto(f"{base}/")
        page.get_by_role("link", name="Queues").click()
        expect(row(page, "email", "paused")).to_have_text("no")
        section = page.locator('section[data-queue="email"]')
        section.get_by_role("button", name="Pause").click()
        expect(page.locator(".notice")).to_contain_text("Queue paused")
        expect(row(page, "email", "paused")).to_have_text("paused")
        assert next(q for q in store.queues() if q.name == "email").paused

        held = mail.enqueue(store, {"to": "b@example.org"})
        page.goto(f"{base}/jobs/{held}")
        expect(page.locator("#waiting")).to_have_text("held back: its queue is paused")
        page.goto(f"{base}/queues")
        section.get_by_label("concurrency").fill("2")
        section.get_by_label("rate", exact=True).fill("60/1m")
        section.get_by_role("button", name="Set limits").click()
        expect(page.locator(".notice")).to_contain_text("Limits set")
        expect(row(page, "email", "concurrency")).to_have_text("2")
        expect(row(page, "email", "rate")).to_have_text("60/1m")
        expect(row(page, "email", "by")).to_have_text("operator")
        if store.engine.__class__.__name__ == "SQLiteEngine":
            screenshot(page, tmp_path, "dashboard-queues.png")

        section.get_by_role("button", name="Clear: use the code's").click()
        expect(page.locator(".notice")).to_contain_text("limits are cleared")
        expect(row(page, "email", "concurrency")).to_have_text("-")
        expect(row(page, "email", "by")).to_have_text("-")
        section.get_by_role("button", name="Resume").click()
        expect(row(page, "email", "paused")).to_have_text("no")
        page.goto(f"{base}/jobs/{held}")
        expect(page.locator("#status")).to_have_text("succeeded", timeout=WAIT_MS)
    # Resumed and cleared, the queue holds no flow control and no job waits
    # in it: its row is dropped, so the store lists it no more.
    assert [q for q in store.queues() if q.name == "email"] == []


def test_a_read_only_dashboard_offers_no_change_and_refuses_a_post(
    store: jobtable.Store, browser: Browser
) -> None:
    mail.enqueue(store, {"to": "a@example.org"})
    store.set_limits("email", concurrency=3)
    context = browser.new_context(viewport={"width": NARROW, "height": 900})
    page = context.new_page()
    try:
        with serve(jobtable.dashboard(store, read_only=True)) as base:
            page.goto(f"{base}/queues")
            expect(row(page, "email", "concurrency")).to_have_text("3")
            expect(page.get_by_role("button", name="Pause")).to_have_count(0)
            expect(page.locator("form[method=post]")).to_have_count(0)
            assert page.evaluate("document.documentElement.scrollWidth") <= NARROW
            refused = page.request.post(
                f"{base}/queues", form={"queue": "email", "action": "pause"}
            )
            assert refused.status == 403
            assert "read-only" in refused.text()
    finally:
        context.close()
    assert not next(q for q in store.queues() if q.name == "email").paused
