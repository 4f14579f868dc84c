"""``jobtable dashboard --pooled`` through PgBouncer in transaction mode: its pages serve.

The dashboard's store is opened as the commands' are, from JOBTABLE_POOLED
(``--pooled``); it polls rather than listens, so it logs no warning about
listening. Starts PgBouncer and the dashboard (slow).
"""

import os
import pathlib
import re
import signal
import subprocess
import sys
import threading

import pytest
from dashboard_server import Client
from pgbouncer_server import PooledURLs

import jobtable

pytestmark = pytest.mark.slow

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
RUNNING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")

halve = jobtable.Kind("halve", int, int)


def test_the_dashboard_serves_its_pages_through_pgbouncer(pooled_pg: PooledURLs) -> None:
    with jobtable.Store.open(pooled_pg.pooled, pooled=True) as store:
        job_id = halve.enqueue(store, 8)
    found_env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTABLE_")}
    env = {
        **found_env,
        "JOBTABLE_STORE": pooled_pg.pooled,
        "JOBTABLE_POOLED": "1",
        "JOBTABLE_DASHBOARD_TOKEN": "tok-pooled",
    }
    process = subprocess.Popen(
        [str(SCRIPT), "dashboard", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
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
        client = Client(f"http://127.0.0.1:{match.group(1)}")
        auth = {"Authorization": "Bearer tok-pooled"}
        for path in ("/", "/jobs", f"/jobs/{job_id}", "/kinds", "/queues", "/search?q=8"):
            page = client.get(path, auth)
            assert page.status == 200, (path, page.text)
        assert job_id in client.get("/jobs?kind=halve", auth).text
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(120) == 0
        reader.join(120)
        process.stdout.close()
    log = "".join(found)
    assert "Traceback" not in log
    assert "listen_url" not in log, "the dashboard never listens, so it is not warned"
