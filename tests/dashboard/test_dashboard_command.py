"""``jobtable dashboard``, run as users run it: the console script in a subprocess."""

import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from dashboard_server import Client

import jobtable

pytestmark = pytest.mark.slow

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


@pytest.fixture
def target(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "jobs.db"
    with jobtable.Store.open(path) as store:
        jobtable.Kind("echo", dict, dict).enqueue(store, {"n": 1})
    return str(path)


def environ(**extra: str) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("JOBTABLE_")}
    return {**found, **extra}


@pytest.fixture
def started(target: str) -> Iterator[tuple[subprocess.Popen[str], str, list[str]]]:
    """The command serving target on a free port, with a token from the environment.

    Yields the process, its base URL and the lines of its log (stdout and
    stderr) read so far.
    """
    proc = subprocess.Popen(
        [str(SCRIPT), "dashboard", "--store", target, "--port", "0"],
        env=environ(JOBTABLE_DASHBOARD_TOKEN="tok-123"),
        stdout=subprocess.PIPE,  # uvicorn's access log
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            found.append(line)
            if RUNNING.search(line):
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(120), "the dashboard did not start"
        match = RUNNING.search("".join(found))
        assert match is not None, "".join(found)
        yield proc, f"http://127.0.0.1:{match.group(1)}", found
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(120)
        reader.join(120)
        proc.stdout.close()


def test_it_serves_the_store_and_stops_cleanly_on_sigint(
    started: tuple[subprocess.Popen[str], str, list[str]],
) -> None:
    proc, base, _ = started
    refused = Client(base).get("/")
    page = Client(base).get("/jobs?kind=echo", {"Authorization": "Bearer tok-123"})
    assert refused.status == 401
    assert page.status == 200
    assert "echo" in page.text
    proc.send_signal(signal.SIGINT)
    assert proc.wait(120) == 0


def run_dashboard(target: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs ``jobtable dashboard --store target *args`` to its end (a refusal)."""
    return subprocess.run(
        [str(SCRIPT), "dashboard", "--store", target, *args],
        capture_output=True,
        text=True,
        env=environ(),
        timeout=120,
    )


def test_it_refuses_to_bind_a_public_address_without_authentication(target: str) -> None:
    done = run_dashboard(target, "--host", "0.0.0.0")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "jobtable: error: dashboard: refusing to bind '0.0.0.0' without authentication: "
        "give a token or basic auth, or bind 127.0.0.1"
    ]


def test_a_bad_basic_auth_is_a_one_line_error(target: str) -> None:
    done = run_dashboard(target, "--basic-auth", "nocolon")
    assert done.returncode == 1
    assert done.stderr == "jobtable: error: --basic-auth: want user:password\n"


def test_the_token_of_a_sign_in_link_never_reaches_the_log(
    started: tuple[subprocess.Popen[str], str, list[str]],
) -> None:
    proc, base, found = started
    signed_in = Client(base).get("/jobs?token=tok-123&kind=echo")
    assert signed_in.status == 303
    proc.send_signal(signal.SIGINT)
    assert proc.wait(120) == 0
    # uvicorn logged the request as it answered; the reader thread may lag behind.
    for _ in range(1200):
        if "See Other" in "".join(found):
            break
        time.sleep(0.1)
    log = "".join(found)
    assert "GET /jobs?token=***&kind=echo" in log
    assert "tok-123" not in log


def test_a_port_in_use_is_a_one_line_error(target: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # uvicorn logged it among its start-up lines and exited with status 3.
        done = run_dashboard(target, "--port", str(port))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"jobtable: error: dashboard: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
