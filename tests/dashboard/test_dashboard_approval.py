"""Human approval on the dashboard: a job waiting for APPROVAL gets Approve and Reject buttons.

The buttons send ``jobtable.APPROVAL`` under the job's id through the
Store, guarded as every other action (CSRF, read-only mode). Each test
serves a real dashboard with a runner, on both engines.
"""

import pytest
from dashboard_server import Client, csrf_token, serve, wait_for

import jobtable

pytestmark = pytest.mark.slow

ORDER = jobtable.Kind("order", int, str)


def approving(store: jobtable.Store) -> jobtable.Runner:
    """A runner whose order jobs wait for a human's approval of themselves."""
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)

    @runner.handler(ORDER)
    async def order(ctx: jobtable.JobContext[str], payload: int) -> str:
        decision = await ctx.wait_for(jobtable.APPROVAL, key=ctx.id)
        return "shipped" if decision.approved else "refused"

    return runner


def waits(store: jobtable.Store, job_id: str) -> bool:
    return store.signal_wait(job_id) is not None


@pytest.mark.parametrize(("action", "result"), [("approve", "shipped"), ("reject", "refused")])
def test_approve_and_reject_resume_the_waiting_job_with_the_decision(
    store: jobtable.Store, action: str, result: str
) -> None:
    job_id = ORDER.enqueue(store, 1)
    with serve(jobtable.dashboard(store), approving(store)) as base:
        wait_for(lambda: waits(store, job_id))
        client = Client(base)
        page = client.get(f"/jobs/{job_id}").text
        assert "an approval" in page
        assert 'id="approve"' in page
        assert 'id="reject"' in page
        sent = client.post(f"/jobs/{job_id}/{action}", {"csrf": csrf_token(page)})
        assert sent.status == 303
        wait_for(lambda: store.get(job_id).status is jobtable.Status.SUCCEEDED)
    assert ORDER.get(store, job_id).result == result


def test_approval_without_the_csrf_token_or_on_a_read_only_dashboard_is_refused(
    store: jobtable.Store,
) -> None:
    job_id = ORDER.enqueue(store, 1)
    with serve(jobtable.dashboard(store), approving(store)) as base:
        wait_for(lambda: waits(store, job_id))
        forged = Client(base).post(f"/jobs/{job_id}/approve", {"csrf": "abc.def"})
    with serve(jobtable.dashboard(store, read_only=True)) as base:
        client = Client(base)
        page = client.get(f"/jobs/{job_id}").text
        read_only = client.post(f"/jobs/{job_id}/approve", {"csrf": "x"})
    assert (forged.status, read_only.status) == (403, 403)
    assert 'id="approve"' not in page
    assert waits(store, job_id), "still waiting"


def test_a_job_that_waits_for_no_approval_has_no_buttons_and_refuses_one(
    store: jobtable.Store,
) -> None:
    job_id = jobtable.Kind("echo", int, int).enqueue(store, 1)
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get(f"/jobs/{job_id}").text
        refused = client.post(f"/jobs/{job_id}/approve", {"csrf": csrf_token(page)})
    assert 'id="approve"' not in page
    assert refused.status == 409
    assert "does not wait for an approval" in refused.text
