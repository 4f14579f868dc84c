"""A job's page in a real browser shows each partial result as the handler publishes it.

The page is never reloaded: its live part arrives as server-sent events
(test_dashboard_live.py shows that a publish wakes the part, whatever the
refresh interval). Like the other browser tests, chromium comes from the
system and Playwright only drives it.
"""

import threading

import pytest
from dashboard_server import serve
from playwright.sync_api import Browser, expect
from test_dashboard_browser import WAIT_MS, browser

import jobtable

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

__all__ = ["browser"]  # the fixture, used by name


def test_the_job_page_shows_each_partial_result_live_then_the_result(
    store: jobtable.Store, browser: Browser
) -> None:
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)
    gates = [threading.Event(), threading.Event()]

    def counting(ctx: jobtable.JobContext[dict[str, int]], payload: str) -> dict[str, int]:
        for done, gate in enumerate(gates, start=1):
            ctx.publish({"done": done})
            gate.wait(120)
        return {"done": 3, "of": 3}

    counter = runner.register("counter", counting)
    job_id = counter.enqueue("count")
    page = browser.new_page()
    try:
        with serve(jobtable.dashboard(store, refresh=0.3), runner) as base:
            page.goto(f"{base}/jobs/{job_id}")
            result = page.locator("pre.result")
            expect(result).to_contain_text('"done": 1', timeout=WAIT_MS)
            page.evaluate("window.notReloaded = true")
            gates[0].set()
            expect(result).to_contain_text('"done": 2', timeout=WAIT_MS)
            gates[1].set()
            expect(result).to_contain_text('"of": 3', timeout=WAIT_MS)
            expect(page.locator("#status")).to_contain_text("succeeded")
            assert page.evaluate("window.notReloaded") is True
            expect(page.locator("#live")).to_have_attribute("data-live", "events")
    finally:
        for gate in gates:
            gate.set()
        page.close()
