"""The dashboard over HTTP, served by a real uvicorn: pages, escaping, CSRF, modes and auth.

The browser tests (test_dashboard_browser.py) drive the same pages through
chromium; these check what a browser cannot show directly: status codes,
headers, exact HTML, and requests a page would never send.
"""

import datetime
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from dashboard_server import Client, csrf_token, serve, wait_for
from starlette.applications import Starlette
from starlette.routing import Mount

import jobtable
from jobtable._dashboard.serve import check_bind

PLANTED = "planted-secret-7f3a9c"
_HOUR = datetime.timedelta(hours=1)
NASTY = '<script>alert("x")</script>&<img src=x onerror=alert(1)>'


@pytest.fixture
def sqlite_store(tmp_path: pathlib.Path) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(tmp_path / "jobs.db") as store:
        yield store


def make_runner(
    store: jobtable.Store,
) -> tuple[jobtable.Runner, jobtable.Kind[dict[str, Any], dict[str, Any]]]:
    """A runner whose kind "leak" raises an exception quoting the planted secret."""
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)

    def leak(ctx: jobtable.JobContext[Any], payload: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError(f"GET https://api.example/?token={PLANTED} returned 500")

    return runner, runner.register("leak", leak)


def test_every_page_escapes_the_stored_payload(store: jobtable.Store) -> None:
    kind = jobtable.Kind("echo", dict, dict)
    job_id = kind.enqueue(store, {"note": NASTY})
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get(f"/jobs/{job_id}")
    assert page.status == 200
    assert "<script>alert" not in page.text
    assert "<img src=x" not in page.text
    assert "&lt;script&gt;alert" in page.text


def test_a_failed_job_shows_only_the_stored_internal_message(store: jobtable.Store) -> None:
    runner, leak = make_runner(store)
    job_id = leak.enqueue(store, {})
    with serve(jobtable.dashboard(store), runner) as base:
        wait_for(lambda: store.get(job_id).status == jobtable.Status.FAILED)
        client = Client(base)
        pages = [client.get(p) for p in ("/", "/live/overview", "/jobs", f"/jobs/{job_id}")]
        pages.append(client.get(f"/jobs/{job_id}/live"))
    assert all(p.status == 200 for p in pages)
    assert not any(PLANTED in p.text for p in pages)
    assert re.search(r'id="error">internal error<', pages[3].text)


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(
    sqlite_store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("echo", dict, dict)
    job_id = kind.enqueue(sqlite_store, {})
    with serve(jobtable.dashboard(sqlite_store)) as base:
        client = Client(base)
        client.get(f"/jobs/{job_id}")  # the browser has the cookie, but the form lacks the token
        refused = client.post(f"/jobs/{job_id}/cancel", {})
        forged = client.post(f"/jobs/{job_id}/cancel", {"csrf": "abc.def"})
        bulk = client.post("/retry-failed", {})
    assert [refused.status, forged.status, bulk.status] == [403, 403, 403]
    assert "CSRF token" in refused.text
    assert sqlite_store.get(job_id).status == jobtable.Status.QUEUED


def test_a_post_from_another_origin_is_refused_even_with_the_token(
    sqlite_store: jobtable.Store,
) -> None:
    job_id = jobtable.Kind("echo", dict, dict).enqueue(sqlite_store, {})
    with serve(jobtable.dashboard(sqlite_store)) as base:
        client = Client(base)
        token = csrf_token(client.get(f"/jobs/{job_id}").text)
        other = client.post(
            f"/jobs/{job_id}/cancel", {"csrf": token}, {"Origin": "https://evil.example"}
        )
        same = client.post(f"/jobs/{job_id}/cancel", {"csrf": token}, {"Origin": base})
    assert other.status == 403
    assert "another origin" in other.text
    assert same.status == 303
    assert sqlite_store.get(job_id).status == jobtable.Status.CANCELLED


def test_the_token_of_another_dashboard_secret_is_refused(sqlite_store: jobtable.Store) -> None:
    job_id = jobtable.Kind("echo", dict, dict).enqueue(sqlite_store, {})
    with serve(jobtable.dashboard(sqlite_store, secret="a" * 32)) as first:
        stolen = csrf_token(Client(first).get("/").text)
    with serve(jobtable.dashboard(sqlite_store, secret="b" * 32)) as second:
        client = Client(second)
        client.cookies["jobtable_csrf"] = stolen
        refused = client.post(f"/jobs/{job_id}/cancel", {"csrf": stolen})
    assert refused.status == 403
    assert sqlite_store.get(job_id).status == jobtable.Status.QUEUED


def test_read_only_shows_no_action_and_refuses_every_post(sqlite_store: jobtable.Store) -> None:
    job_id = jobtable.Kind("echo", dict, dict).enqueue(sqlite_store, {})
    with serve(jobtable.dashboard(sqlite_store, read_only=True)) as base:
        client = Client(base)
        pages = [client.get(p).text for p in ("/", "/jobs", f"/jobs/{job_id}")]
        posts = [
            client.post(f"/jobs/{job_id}/{action}", {"csrf": "x"})
            for action in ("cancel", "retry", "delete")
        ]
    assert not any('method="post"' in page for page in pages)
    assert all("read-only" in page for page in pages)
    assert [p.status for p in posts] == [403, 403, 403]
    assert sqlite_store.get(job_id).status == jobtable.Status.QUEUED


def test_links_stay_under_the_mount_path_of_a_host_app(sqlite_store: jobtable.Store) -> None:
    job_id = jobtable.Kind("echo", dict, dict).enqueue(sqlite_store, {})
    host = Starlette(routes=[Mount("/ops/jobs", jobtable.dashboard(sqlite_store))])
    with serve(host) as base:
        client = Client(base)
        overview = client.get("/ops/jobs/")
        listing = client.get("/ops/jobs/jobs")
        page = client.get(f"/ops/jobs/jobs/{job_id}")
        asset = client.get("/ops/jobs/static/dashboard.css")
        token = csrf_token(page.text)
        cancelled = client.post(f"/ops/jobs/jobs/{job_id}/cancel", {"csrf": token})
    links = re.findall(r'(?:href|src|action|data-refresh)="([^"]+)"', overview.text + page.text)
    assert links
    assert all(link.startswith("/ops/jobs/") for link in links), links
    assert f'href="/ops/jobs/jobs/{job_id}"' in listing.text
    assert asset.status == 200
    assert cancelled.status == 303
    assert cancelled.headers["location"].startswith(f"/ops/jobs/jobs/{job_id}?")
    assert client.cookies.get("jobtable_csrf")


def test_the_job_list_pages_by_keyset_through_every_job(sqlite_store: jobtable.Store) -> None:
    kind = jobtable.Kind("echo", dict, dict)
    ids = [kind.enqueue(sqlite_store, {"n": n}) for n in range(7)]
    with serve(jobtable.dashboard(sqlite_store)) as base:
        client = Client(base)
        seen: list[str] = []
        path: str | None = "/jobs?kind=echo&limit=3"
        while path is not None:
            page = client.get(path).text
            seen += re.findall(r'<tr data-id="([^"]+)"', page)
            older = re.search(r'rel="next" href="([^"]+)"', page)
            path = None if older is None else older.group(1).replace("&amp;", "&")
    assert seen == list(reversed(ids))


def test_the_job_list_filters_by_tag_and_offers_no_bulk_action_on_every_match(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("echo", dict, dict)
    tagged = [kind.enqueue(store, {"n": n}, tags=["batch-7"]) for n in range(3)]
    kind.enqueue(store, {"n": 9}, tags=["batch-8"])
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get("/jobs?tag=batch-7&kind=echo").text
        bad = client.get("/jobs?tag=not%20a%20tag")
    assert re.findall(r'<tr data-id="([^"]+)"', page) == list(reversed(tagged))
    assert 'name="tag" value="batch-7"' in page
    # The bulk actions on every match know no tag: they would reach batch-8 too.
    assert 'id="bulk-filter"' not in page
    assert bad.status == 400
    assert "tag must be" in bad.text


def test_a_bad_filter_is_a_400_naming_it(sqlite_store: jobtable.Store) -> None:
    with serve(jobtable.dashboard(sqlite_store)) as base:
        client = Client(base)
        status = client.get("/jobs?status=done")
        limit = client.get("/jobs?limit=0")
        missing = client.get("/jobs/no-such-job")
    assert status.status == 400
    assert "status: want one of queued" in status.text
    assert limit.status == 400
    assert "limit" in limit.text
    assert missing.status == 404


def test_every_page_forbids_inline_script_and_framing(sqlite_store: jobtable.Store) -> None:
    with serve(jobtable.dashboard(sqlite_store)) as base:
        reply = Client(base).get("/")
    policy = reply.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy


def test_a_token_guards_every_page_and_moves_from_the_url_to_a_cookie(
    sqlite_store: jobtable.Store,
) -> None:
    with serve(jobtable.dashboard(sqlite_store, token="s3cret-token")) as base:
        anonymous = Client(base).get("/")
        wrong = Client(base).get("/", {"Authorization": "Bearer nope"})
        bearer = Client(base).get("/", {"Authorization": "Bearer s3cret-token"})
        browser = Client(base)
        moved = browser.get("/jobs?token=s3cret-token&status=queued")
        after = browser.get("/jobs?status=queued")
    assert [anonymous.status, wrong.status, bearer.status] == [401, 401, 200]
    assert moved.status == 303
    assert moved.headers["location"] == "/jobs?status=queued"
    assert after.status == 200


def test_basic_auth_guards_every_page(sqlite_store: jobtable.Store) -> None:
    app = jobtable.dashboard(sqlite_store, basic_auth=("ops", "pa:ss"))
    with serve(app) as base:
        anonymous = Client(base).get("/")
        wrong = Client(base).get("/", {"Authorization": "Basic b3BzOm5vcGU="})  # ops:nope
        right = Client(base).get("/", {"Authorization": "Basic b3BzOnBhOnNz"})  # ops:pa:ss
    assert anonymous.status == 401
    assert anonymous.headers["www-authenticate"].startswith("Basic")
    assert wrong.status == 401
    assert right.status == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::", "example.com"])
def test_standalone_refuses_a_non_loopback_bind_without_authentication(host: str) -> None:
    with pytest.raises(ValueError, match="refusing to bind"):
        check_bind(host, token=None, basic_auth=None)
    check_bind(host, token="t", basic_auth=None)
    check_bind(host, token=None, basic_auth=("u", "p"))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_standalone_binds_loopback_without_authentication(host: str) -> None:
    check_bind(host, token=None, basic_auth=None)


def test_bad_arguments_are_clear_errors(sqlite_store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match=r"want a jobtable\.Store"):
        jobtable.dashboard("jobs.db")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="refresh"):
        jobtable.dashboard(sqlite_store, refresh=0)
    with pytest.raises(ValueError, match="basic_auth"):
        jobtable.dashboard(sqlite_store, basic_auth=("a:b", "c"))
    with pytest.raises(ValueError, match="secret"):
        jobtable.dashboard(sqlite_store, secret="short")


def test_a_link_cannot_make_a_notice_say_more_than_its_code(sqlite_store: jobtable.Store) -> None:
    with serve(jobtable.dashboard(sqlite_store)) as base:
        client = Client(base)
        crafted = client.get("/jobs?notice=bulk-retry&count=call+555-0100")
        counted = client.get("/jobs?notice=bulk-retry&count=12")
        unknown = client.get("/jobs?notice=Your+account+is+locked")
    assert "Failed jobs queued again: 0." in crafted.text
    assert "555-0100" not in crafted.text
    assert "Failed jobs queued again: 12." in counted.text
    assert "locked" not in unknown.text


def test_the_overview_shows_jobs_scheduled_for_later_apart_from_the_due_ones(
    sqlite_store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("echo", dict, dict)
    kind.enqueue(sqlite_store, {}, queue="later", run_at=sqlite_store.clock() + _HOUR)
    with serve(jobtable.dashboard(sqlite_store)) as base:
        page = Client(base).get("/live/overview")
    row = re.search(r'<tr data-queue="later">(.*?)</tr>', page.text, re.DOTALL)
    assert row is not None
    # Nothing is due: no oldest age (not 0s), and the one job shows as scheduled later.
    assert re.search(r'<td class="n">-</td>\s*<td class="n" data-scheduled>1</td>', row[1])
