"""A real uvicorn serving an ASGI app on a free loopback port, in a thread; and a small client.

The server thread runs its own event loop, which also runs a runner when one
is given, so a test's handlers run beside the pages that show them. The
client speaks HTTP through ``http.client``: no redirects followed, cookies
kept, so a test sees each response as the browser would get it.
"""

import asyncio
import contextlib
import http.client
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import uvicorn
from starlette.types import ASGIApp

import jobtable

STARTUP_TIMEOUT = 60.0


@contextlib.contextmanager
def serve(app: ASGIApp, runner: jobtable.Runner | None = None) -> Iterator[str]:
    """Serves app (and runs runner) until the block ends; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    ready = threading.Event()
    failure: list[BaseException] = []

    async def main() -> None:
        if runner is not None:
            await runner.start()
        try:
            task = asyncio.create_task(server.serve(sockets=[sock]))
            # uvicorn signals its start with a flag only, no event to await.
            while not server.started and not task.done():  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            ready.set()
            await task
        finally:
            if runner is not None:
                runner.stop()
                await runner.wait()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as err:
            failure.append(err)
            ready.set()

    thread = threading.Thread(target=run, name="dashboard-server", daemon=True)
    thread.start()
    assert ready.wait(STARTUP_TIMEOUT), "the dashboard server did not start"
    if failure:
        raise failure[0]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STARTUP_TIMEOUT)
        sock.close()
        if failure:
            raise failure[0]


@dataclass
class Reply:
    """One HTTP response: status, headers (lower-case names) and body text."""

    status: int
    headers: dict[str, str]
    text: str


@dataclass
class Client:
    """An HTTP client for one server that keeps the cookies it is given."""

    base: str
    cookies: dict[str, str] = field(default_factory=dict)

    def request(
        self,
        method: str,
        path: str,
        form: dict[str, str] | list[tuple[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """Sends one request; returns the reply, redirects not followed."""
        host = self.base.removeprefix("http://")
        conn = http.client.HTTPConnection(host, timeout=60)
        sent = dict(headers or {})
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            text = response.read().decode()
            for value in response.headers.get_all("set-cookie") or []:
                for name, morsel in SimpleCookie(value).items():
                    self.cookies[name] = morsel.value
            found = {k.lower(): v for k, v in response.getheaders()}
            return Reply(response.status, found, text)
        finally:
            conn.close()

    def get(self, path: str, headers: dict[str, str] | None = None) -> Reply:
        """GET path."""
        return self.request("GET", path, headers=headers)

    def post(
        self,
        path: str,
        form: dict[str, str] | list[tuple[str, str]],
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """POST form to path, urlencoded (pairs: a field may repeat)."""
        return self.request("POST", path, form=form, headers=headers)


def wait_for(check: Callable[[], bool], limit: float = 60.0) -> None:
    """Waits until check() is true, polling; fails after limit seconds (generous: a loaded box)."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit} s waiting for {check}")
        time.sleep(0.05)


CSRF_INPUT = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_token(html: str) -> str:
    """The CSRF token a page embeds in its forms."""
    found = CSRF_INPUT.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)
