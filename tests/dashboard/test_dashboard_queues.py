"""The dashboard's queues page and the job page's waiting row, over HTTP on every engine.

Each test serves the dashboard with a real uvicorn and sends what a browser
would; what each POST changed is read back through the Store.
"""

import asyncio
import datetime
import re
import threading

from dashboard_server import Client, csrf_token, serve

import jobtable

mail = jobtable.Kind("mail", dict, dict, queue="email")


def queue_of(store: jobtable.Store, name: str) -> jobtable.QueueInfo:
    [found] = [queue for queue in store.queues() if queue.name == name]
    return found


def figures(html: str, name: str) -> dict[str, str]:
    """The figures of queue name's row in the queues table, by their data-figure."""
    row = re.search(rf'<tr data-queue="{re.escape(name)}">(.*?)</tr>', html, re.S)
    assert row is not None, f"no row for {name}"
    cells = re.findall(r'data-figure="([^"]+)"[^>]*>(.*?)</td>', row.group(1), re.S)
    return {figure: re.sub(r"<[^>]+>", "", text).strip() for figure, text in cells}


def test_the_queues_page_lists_pause_limits_who_set_them_and_counts(
    store: jobtable.Store,
) -> None:
    store.declare([jobtable.Queue("exports", concurrency=5)])
    store.set_limits(
        "api",
        partition_limit=2,
        rate=jobtable.Rate(60, per=datetime.timedelta(minutes=1)),
    )
    mail.enqueue_many(store, [{}, {}])
    store.pause("email")
    with serve(jobtable.dashboard(store)) as base:
        page = Client(base).get("/queues")
    assert page.status == 200
    assert 'href="/queues">Queues</a>' in page.text
    assert figures(page.text, "email") == {
        "paused": "paused",
        "concurrency": "-",
        "partition-limit": "-",
        "rate": "-",
        "by": "-",
        "queued": "2",
        "running": "0",
        "runners": "-",
    }
    assert figures(page.text, "api")["rate"] == "60/1m"
    assert figures(page.text, "api")["partition-limit"] == "2"
    assert figures(page.text, "api")["by"] == "operator"
    assert figures(page.text, "exports")["concurrency"] == "5"
    assert figures(page.text, "exports")["by"] == "code"


def test_pause_resume_set_and_clear_post_through_the_store(store: jobtable.Store) -> None:
    store.declare([jobtable.Queue("exports", concurrency=7)])
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        token = csrf_token(client.get("/queues").text)

        def post(action: str, **fields: str) -> str:
            reply = client.post(
                "/queues", {"csrf": token, "queue": "exports", "action": action, **fields}
            )
            assert reply.status == 303, reply.text
            assert reply.headers["location"] == f"/queues?notice=queue-{action}"
            return client.get(reply.headers["location"]).text

        paused = post("pause")
        assert queue_of(store, "exports").paused
        assert "Queue paused" in paused
        assert 'value="resume">Resume</button>' in paused
        post("resume")
        assert not queue_of(store, "exports").paused
        limited = post(
            "set", concurrency="3", partition_limit="", rate="90/1h30m", rate_per_key="1"
        )
        found = queue_of(store, "exports")
        assert (found.concurrency, found.partition_limit, found.rate_limit) == (3, None, 90)
        assert (found.rate_per, found.rate_per_key, found.overridden) == (5400.0, True, True)
        assert figures(limited, "exports")["rate"] == "90/1h30m per key"
        assert 'name="rate" placeholder="60/1m" value="90/1h30m"' in limited
        assert 'value="clear">' in limited
        post("clear")
        found = queue_of(store, "exports")
        assert (found.concurrency, found.rate_limit, found.overridden) == (7, None, False)


def test_a_bad_value_an_unknown_queue_or_action_change_nothing_and_say_why(
    store: jobtable.Store,
) -> None:
    store.set_limits("exports", concurrency=4)
    before = store.queues()
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        token = csrf_token(client.get("/queues").text)
        for fields, status, said in (
            ({"action": "set", "concurrency": "0"}, 400, "concurrency &#39;0&#39;: want a whole"),
            ({"action": "set", "partition_limit": "-1"}, 400, "partition limit &#39;-1&#39;"),
            ({"action": "set", "rate": "5/0s"}, 400, "rate &#39;5/0s&#39;: the period"),
            ({"action": "set", "rate": "five"}, 400, "want LIMIT/PERIOD"),
            ({"action": "set", "rate_per_key": "1"}, 400, "a rate per key needs a rate"),
            ({"action": "set"}, 400, "give a concurrency, a partition limit or a rate"),
            ({"action": "explode"}, 400, "action: want one of pause, resume, set, clear"),
            ({"action": "pause", "queue": "nope"}, 404, "No such queue"),
        ):
            form = {"csrf": token, "queue": "exports", **fields}
            reply = client.post("/queues", form)
            assert reply.status == status, fields
            assert said in reply.text, reply.text
    assert store.queues() == before


def test_without_the_csrf_token_or_when_read_only_a_post_is_refused(store: jobtable.Store) -> None:
    mail.enqueue(store, {})
    with serve(jobtable.dashboard(store)) as base:
        refused = Client(base).post("/queues", {"queue": "email", "action": "pause"})
    assert refused.status == 403
    assert "CSRF token is missing" in refused.text
    with serve(jobtable.dashboard(store, read_only=True)) as base:
        client = Client(base)
        page = client.get("/queues")
        token = client.cookies["jobtable_csrf"]  # a valid token: read-only mode alone refuses
        read_only = client.post("/queues", {"csrf": token, "queue": "email", "action": "pause"})
    assert figures(page.text, "email")["paused"] == "no"
    assert '<form method="post"' not in page.text
    assert read_only.status == 403
    assert "read-only" in read_only.text
    assert not queue_of(store, "email").paused


def test_the_job_page_says_why_a_queued_job_waits(store: jobtable.Store) -> None:
    ready = mail.enqueue(store, {})
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        before = client.get(f"/jobs/{ready}").text
        store.pause("email")
        held = client.get(f"/jobs/{ready}").text
        live = client.get(f"/jobs/{ready}/live").text
    assert 'id="waiting"' not in before
    expected = f'id="waiting">held back: {jobtable.WaitReason.PAUSED.text}</dd>'
    assert expected in held
    assert expected in live


def test_the_queues_page_names_the_live_runners_holding_a_queues_jobs(
    store: jobtable.Store,
) -> None:
    held = threading.Event()
    runner = jobtable.Runner(store, name="mailer-1", queues={"email": 1}, poll_interval=0.05)

    @runner.handler(mail)
    async def send(
        ctx: jobtable.JobContext[dict[str, object]], payload: dict[str, object]
    ) -> dict[str, object]:
        held.set()
        await asyncio.sleep(3600)
        return {}

    job_id = mail.enqueue(store, {})
    with serve(jobtable.dashboard(store), runner) as base:
        assert held.wait(60), "the runner never started the job"
        page = Client(base).get("/queues")
        store.cancel(job_id)
    assert figures(page.text, "email")["runners"] == "mailer-1"
    assert figures(page.text, "email")["running"] == "1"
