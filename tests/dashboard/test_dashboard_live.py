"""The live parts as server-sent events: one render shared by every viewer, sent when changed."""

import asyncio
import contextlib
import http.client
import re
import threading
from collections.abc import Callable, Generator

import pytest
from dashboard_server import Client, serve, wait_for

import jobtable
from jobtable._dashboard.live import Broadcast, Frame
from jobtable._wait.waiters import waiters_of

note = jobtable.Kind("note", str, str)


async def test_one_render_a_tick_serves_every_viewer() -> None:
    broadcast = Broadcast(every=1.0)
    renders = 0

    async def render() -> Frame:
        nonlocal renders
        renders += 1
        return Frame("<p>the same</p>")

    async def first(watch: object) -> Frame:
        async for frame in broadcast.watch("overview", render):
            return frame
        raise AssertionError("no frame")

    frames = await asyncio.gather(*(first(n) for n in range(20)))
    assert {frame.html for frame in frames} == {"<p>the same</p>"}
    assert renders <= 2  # one a tick, however many watch: polling costs 20


async def test_a_viewer_gets_a_frame_only_when_it_changed_and_none_after_the_final_one() -> None:
    broadcast = Broadcast(every=0.01)
    script = ["a", "a", "a", "b", "b", "c"]

    async def render() -> Frame:
        html = script.pop(0) if len(script) > 1 else script[0]
        return Frame(html, final=html == "c")

    seen = [frame.html async for frame in broadcast.watch("job", render)]
    assert seen == ["a", "b", "c"]


def events(
    base: str, path: str, cookie: str = "", limit: int = 1
) -> Generator[tuple[str, str], None, None]:
    """Each (event name, data) of the stream at path, up to limit events or the stream's end."""
    conn = http.client.HTTPConnection(base.removeprefix("http://"), timeout=60)
    conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("content-type", "").startswith("text/event-stream")
    name, data, got = "message", [], 0
    try:
        while got < limit and (line := response.readline().decode()):
            line = line.rstrip("\n")
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data.append(line.removeprefix("data: "))
            elif not line and data:
                yield name, "\n".join(data)
                name, data, got = "message", [], got + 1
    finally:
        conn.close()


@pytest.mark.slow
def test_the_overview_stream_sends_the_counts_as_they_change(store: jobtable.Store) -> None:
    note.enqueue(store, "first")
    with serve(jobtable.dashboard(store, refresh=0.05)) as base:
        stream = contextlib.closing(events(base, "/live/overview/events", limit=10))
        with stream as frames:
            _, first = next(frames)
            assert re.search(r'data-status="queued"><a [^>]*>1<', first)
            note.enqueue(store, "second")
            assert any(re.search(r'data-status="queued"><a [^>]*>2<', d) for _, d in frames)


@pytest.mark.slow
def test_a_jobs_stream_ends_with_its_final_part_and_each_viewer_gets_its_own_token(
    store: jobtable.Store,
) -> None:
    job_id = note.enqueue(store, "hello")
    with serve(jobtable.dashboard(store, refresh=0.05)) as base:
        tokens = set()
        for _ in range(2):
            viewer = Client(base)
            viewer.get(f"/jobs/{job_id}")  # sets the viewer's CSRF cookie
            cookie = "; ".join(f"{k}={v}" for k, v in viewer.cookies.items())
            [(_, data)] = events(base, f"/jobs/{job_id}/live/events", cookie)
            [token] = set(re.findall(r'name="csrf" value="([^"]+)"', data))
            assert token == viewer.cookies["jobtable_csrf"]
            tokens.add(token)
        assert len(tokens) == 2
        store.cancel(job_id)
        wait_for(lambda: store.get(job_id).status == jobtable.Status.CANCELLED)
        received = list(events(base, f"/jobs/{job_id}/live/events", limit=100))
        assert received[-1][0] == "final"  # and the stream ended after it
        assert "cancelled" in received[-1][1]
        assert Client(base).get("/jobs/no-such-job/live/events").status == 404


@pytest.mark.slow
def test_a_jobs_stream_shows_each_partial_result_as_it_is_published(
    store: jobtable.Store,
) -> None:
    """Refreshed once an hour, the job's part still changes at each publish: the store wakes it."""
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)
    go = [threading.Event() for _ in range(2)]

    def counting(ctx: jobtable.JobContext[dict[str, int]], payload: str) -> dict[str, int]:
        for done, gate in enumerate(go, start=1):
            ctx.publish({"done": done})
            gate.wait(60)
        return {"done": 3}

    counter = runner.register("counter", counting)
    job_id = counter.enqueue("count")
    with serve(jobtable.dashboard(store, refresh=3600), runner) as base:
        wait_for(lambda: store.get(job_id).result == {"done": 1})
        frames = events(base, f"/jobs/{job_id}/live/events", limit=100)
        with contextlib.closing(frames):
            for gate, shown in zip(go, ("1", "2"), strict=True):
                assert any(re.search(rf"done&#34;: {shown}\b", data) for _, data in frames)
                # The part is watched, and its wake-ups come once the store listens.
                wait_for(lambda: waiters_of(store, store.engine).listening)
                gate.set()
            name, data = next(frames)
            while name != "final":
                name, data = next(frames)
            assert re.search(r"done&#34;: 3\b", data)


async def test_wake_ups_render_a_part_no_more_often_than_the_gap_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On SQLite every commit wakes every watched job's part: a busy store must
    # not have an open job page render at each commit.
    monkeypatch.setattr("jobtable._dashboard.live.WOKEN_GAP", 3600.0)
    broadcast = Broadcast(every=3600.0)
    renders = 0
    wakes: list[Callable[[], None]] = []

    async def render() -> Frame:
        nonlocal renders
        renders += 1
        return Frame(f"<p>{renders}</p>")

    def subscribe(wake: Callable[[], None]) -> Callable[[], None]:
        wakes.append(wake)
        return lambda: None

    frames = broadcast.watch("job", render, subscribe)
    assert (await anext(frames)).html == "<p>1</p>"
    for _ in range(100):
        wakes[0]()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(anext(frames), 0.5)
    assert renders == 1
    await frames.aclose()
