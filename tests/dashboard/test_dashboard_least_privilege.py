"""The dashboard's pages and actions as a PostgreSQL role with DML rights only.

The schema's owner migrates it and grants the role what ``Store.grant``
lists (tests/pg_roles.py); the dashboard, and a runner beside it, open the
store as that role.
"""

from collections.abc import Iterator

import pytest
from dashboard_server import Client, csrf_token, serve, wait_for
from pg_roles import Roles, granted

import jobtable

ping = jobtable.Kind("ping", int, int)


@pytest.fixture
def roles(pg_server: str) -> Iterator[Roles]:
    """A migrated schema, its owner, and a role holding only what the grant gives."""
    with granted(pg_server) as made:
        yield made


def test_every_page_and_action_works_as_a_role_with_dml_rights_only(roles: Roles) -> None:
    with jobtable.Store.open(roles.app_url, migrate=False) as store:
        runner = jobtable.Runner(store, workers=1, poll_interval=0.05)

        @runner.handler(ping)
        def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
            if payload < 0:
                raise jobtable.Failure("negative")
            return payload

        flow = jobtable.Workflow("pages")
        node = flow.add(ping, 1)
        flow.enqueue(store)
        failed = ping.enqueue(store, -1)
        later = ping.enqueue(store, 2, run_at=store.clock().replace(year=2100))
        with serve(jobtable.dashboard(store), runner) as base:
            wait_for(lambda: store.get(failed).status is jobtable.Status.FAILED)
            wait_for(lambda: store.get(node.id).status is jobtable.Status.SUCCEEDED)
            client = Client(base)
            pages = [
                "/",
                "/live/overview",
                "/jobs",
                "/jobs?status=failed",
                "/search?q=ping",
                "/kinds",
                "/queues",
                f"/jobs/{failed}",
                f"/jobs/{failed}/live",
                "/workflows",
                f"/workflows/{flow.id}",
                f"/workflows/{flow.id}/live",
            ]
            shown = {page: client.get(page).status for page in pages}
            token = csrf_token(client.get("/queues").text)
            posts = {
                "retry": client.post(f"/jobs/{failed}/retry", {"csrf": token}),
                "cancel": client.post(f"/jobs/{later}/cancel", {"csrf": token}),
                "pause": client.post(
                    "/queues", {"csrf": token, "queue": "default", "action": "pause"}
                ),
                "resume": client.post(
                    "/queues", {"csrf": token, "queue": "default", "action": "resume"}
                ),
                "retry-failed": client.post("/retry-failed", {"csrf": token}),
                "workflow": client.post(f"/workflows/{flow.id}/cancel", {"csrf": token}),
                "delete": client.post(f"/jobs/{node.id}/delete", {"csrf": token}),
            }
        assert shown == dict.fromkeys(pages, 200)
        assert {name: reply.status for name, reply in posts.items()} == dict.fromkeys(posts, 303)
        assert store.get(later).status is jobtable.Status.CANCELLED
