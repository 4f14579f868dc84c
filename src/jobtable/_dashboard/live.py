"""The live parts of pages as server-sent events, one render shared by every open page.

A page's live part (the overview's counts, a job's record) is rendered once
per refresh interval however many browsers show it, and sent to each only
when it changed: 50 open overviews cost one render a tick, where polling
costs 50. A stream ends after ``LIFETIME`` seconds and the browser opens it
again, so a server that shuts down gracefully waits for no stream longer
than that. The script falls back to polling where a stream never opens (a
proxy that buffers responses).
"""

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from jobtable._dashboard.security import SECURITY_HEADERS, Csrf

LIFETIME = 10.0
"""Seconds a stream lasts before the browser opens it again."""

WOKEN_GAP = 0.2
"""The fewest seconds between two renders of a part that wake-ups ask for.

On SQLite every commit to the file wakes every watched job's part: a busy
store would otherwise have an open job page render at each commit.
"""

CSRF_MARK = "\x00csrf\x00"
"""Stands for the viewer's CSRF token in a shared render; each stream puts its own in."""

logger = logging.getLogger("jobtable.dashboard")


@dataclasses.dataclass(frozen=True, slots=True)
class Frame:
    """One render of a live part: its HTML, and whether it will change no more."""

    html: str
    final: bool = False


Render = Callable[[], Awaitable[Frame]]

Subscribe = Callable[[Callable[[], None]], Callable[[], None]]
"""Calls its argument (from any thread) when a part may have changed; returns what unsubscribes."""


class _Topic:
    """One live part: the task that renders it while anyone watches, and its last frame."""

    def __init__(self, render: Render, every: float, subscribe: Subscribe | None = None) -> None:
        self.render = render
        self.every = every
        self.subscribe = subscribe
        self.woken = asyncio.Event()
        self.frame: Frame | None = None
        self.version = 0
        self.changed = asyncio.Condition()
        self.watchers = 0
        self.task: asyncio.Task[None] | None = None

    async def produce(self) -> None:
        """Renders every interval, and when woken, while watched; wakes the watchers on a change."""
        unsubscribe = None
        if self.subscribe is not None:
            loop = asyncio.get_running_loop()

            def wake() -> None:
                loop.call_soon_threadsafe(self.woken.set)

            unsubscribe = self.subscribe(wake)
        try:
            await self._produce()
        finally:
            if unsubscribe is not None:
                unsubscribe()

    async def _produce(self) -> None:
        while self.watchers:
            self.woken.clear()
            try:
                frame = await self.render()
            except Exception:  # the store is down, say: keep the last frame, try again
                logger.warning("dashboard: a live part failed to render", exc_info=True)
            else:
                if frame != self.frame:
                    async with self.changed:
                        self.frame = frame
                        self.version += 1
                        self.changed.notify_all()
                if frame.final:
                    return
            rendered = asyncio.get_running_loop().time()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), self.every)
                # Woken: render again, but not more often than WOKEN_GAP allows.
                gap = rendered + min(WOKEN_GAP, self.every) - asyncio.get_running_loop().time()
                if gap > 0:
                    await asyncio.sleep(gap)


class Broadcast:
    """The live parts being watched, by key; each is rendered by one task while watched."""

    def __init__(self, every: float) -> None:
        self.every = every
        self._topics: dict[str, _Topic] = {}

    async def watch(
        self, key: str, render: Render, subscribe: Subscribe | None = None
    ) -> AsyncGenerator[Frame, None]:
        """The frames of the part named key, the current one first, for at most LIFETIME s.

        render makes a frame; it is called by the part's one task, not per
        watcher, every interval and, given subscribe, at once each time
        subscribe's wake-up says the part may have changed. The iteration
        ends after a final frame, or at LIFETIME.
        """
        topic = self._topics.get(key)
        if topic is None or (topic.task is not None and topic.task.done()):
            topic = self._topics[key] = _Topic(render, self.every, subscribe)
        topic.watchers += 1
        if topic.task is None or topic.task.done():
            topic.task = asyncio.create_task(topic.produce(), name=f"dashboard live {key}")
        try:
            async for frame in _frames(topic):
                yield frame
        finally:
            topic.watchers -= 1
            if not topic.watchers:
                if self._topics.get(key) is topic:
                    del self._topics[key]
                topic.task.cancel()


async def _frames(topic: _Topic) -> AsyncIterator[Frame]:
    """Each new frame of topic until a final one or LIFETIME seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIFETIME
    sent = 0

    def new() -> bool:
        return topic.version != sent

    while loop.time() < deadline:
        async with topic.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    topic.changed.wait_for(new),
                    max(0.0, deadline - loop.time()),
                )
            frame, version = topic.frame, topic.version
        if frame is None or version == sent:
            continue
        sent = version
        yield frame
        if frame.final:
            return


def event(frame: Frame, token: str) -> str:
    """frame as one server-sent event, with token for the CSRF mark; ``final`` names the last."""
    html = frame.html.replace(CSRF_MARK, token).replace("\r\n", "\n").replace("\r", "\n")
    data = "".join(f"data: {line}\n" for line in html.split("\n"))
    return ("event: final\n" if frame.final else "") + data + "\n"


def event_stream(
    request: Request,
    csrf: Csrf,
    broadcast: Broadcast,
    key: str,
    render: Render,
    subscribe: Subscribe | None = None,
) -> Response:
    """The live part named key as server-sent events, each with the viewer's CSRF token."""
    token, fresh = csrf.token_for(request)

    async def body() -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        async for frame in broadcast.watch(key, render, subscribe):
            yield event(frame, token)

    headers = {**SECURITY_HEADERS, "cache-control": "no-store", "x-accel-buffering": "no"}
    response = StreamingResponse(body(), media_type="text/event-stream", headers=headers)
    if fresh:
        csrf.set_cookie(request, response, token)
    return response
