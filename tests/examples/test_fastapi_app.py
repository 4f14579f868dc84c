"""examples/fastapi_app: in process with FastAPI's TestClient, and for real behind uvicorn.

The uvicorn tests run the app as a user would, in processes of its own on
a free port, and drive it with httpx (httpx2, its maintained successor):
once with the runner in the web process's lifespan, once with a separate
worker process. Both engines.
"""

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import fastapi.testclient
import httpx2 as httpx
import pytest
from fastapi_app.app import create_app
from fastapi_app.settings import Settings
from fastapi_app.tasks import Welcome, welcome
from fastapi_app.worker import make_runner

import jobtable
from jobtable.testing import assert_enqueued, assert_not_enqueued, drain_sync

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"
ADA = {"email": "ada@example.com", "name": "Ada"}


def test_sign_up_enqueues_the_welcome_in_the_users_transaction(store_target: str) -> None:
    settings = Settings(database=store_target, workers=0)
    with fastapi.testclient.TestClient(create_app(settings)) as client:
        created = client.post("/users", json=ADA)
        assert created.status_code == 201
        user_id, job_id = created.json()["user_id"], created.json()["job_id"]
        store = client.app.state.store  # type: ignore[attr-defined]
        assert assert_enqueued(store, welcome, Welcome(user_id=user_id)).id == job_id
        # The email is taken: the user's insert and its enqueue roll back together.
        assert client.post("/users", json={**ADA, "name": "Eve"}).status_code == 409
        assert_enqueued(store, welcome, count=1)

        runner = make_runner(store, client.app.state.database)  # type: ignore[attr-defined]
        [record] = drain_sync(runner)
        assert (record.id, record.status) == (job_id, jobtable.Status.SUCCEEDED)
        assert client.get(f"/users/{user_id}").json()["welcomed"] is True
        job = client.get(f"/jobs/{job_id}").json()
        assert job["result"] == {"user_id": user_id, "message": "Welcome, Ada!"}
        assert client.get("/jobs/nope").status_code == 404


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def process(args: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """Runs args from examples/; on exit stops it with SIGTERM and checks it stopped cleanly.

    uvicorn, once its lifespan has shut down, ends itself with the signal it
    got; the worker returns from ``runner.run()`` and exits 0.
    """
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=EXAMPLES, env={**os.environ, **env}, stderr=subprocess.PIPE
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
    clean = proc.returncode == 0 or (
        proc.returncode == -signal.SIGTERM and b"Application shutdown complete" in stderr
    )
    assert clean, f"exit {proc.returncode}: {stderr.decode(errors='replace')}"


def uvicorn(port: int, env: dict[str, str]) -> contextlib.AbstractContextManager[object]:
    args = ["-m", "uvicorn", "fastapi_app.app:app", "--host", "127.0.0.1", "--port", str(port)]
    return process(args, env)


def wait_for(check: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {limit} s waiting for {what}")
        time.sleep(0.05)


def answers(client: httpx.Client) -> bool:
    try:
        return client.get("/health").status_code == 200
    except httpx.TransportError:
        return False


def sign_up_and_wait(client: httpx.Client) -> dict[str, object]:
    """Signs Ada up through the running app; returns her job once it succeeded."""
    wait_for(lambda: answers(client), "uvicorn to answer")
    created = client.post("/users", json=ADA)
    assert created.status_code == 201, created.text
    user_id, job_id = created.json()["user_id"], created.json()["job_id"]
    assert client.post("/users", json=ADA).status_code == 409
    wait_for(lambda: client.get(f"/jobs/{job_id}").json()["status"] == "succeeded", "the job")
    assert client.get(f"/users/{user_id}").json()["welcomed"] is True
    job: dict[str, object] = client.get(f"/jobs/{job_id}").json()
    assert job["result"] == {"user_id": user_id, "message": "Welcome, Ada!"}
    return job


@pytest.mark.slow
def test_uvicorn_runs_the_job_in_the_web_process(store_target: str) -> None:
    port = free_port()
    env = {"EXAMPLE_DATABASE": store_target, "EXAMPLE_WORKERS": "2"}
    with uvicorn(port, env), httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        sign_up_and_wait(client)
    with jobtable.Store.open(store_target) as store:
        assert_enqueued(store, welcome, count=1, status=jobtable.Status.SUCCEEDED)


@pytest.mark.slow
def test_a_separate_worker_process_runs_the_job_the_web_process_enqueued(
    store_target: str,
) -> None:
    port = free_port()
    env = {"EXAMPLE_DATABASE": store_target, "EXAMPLE_WORKERS": "0"}
    worker_env = {**env, "JOBTABLE_WORKER": "example-worker"}
    with (
        uvicorn(port, env),
        process(["-m", "fastapi_app.worker"], worker_env),
        httpx.Client(base_url=f"http://127.0.0.1:{port}") as client,
    ):
        job = sign_up_and_wait(client)
    with jobtable.Store.open(store_target) as store:
        assert store.inspect(str(job["id"])).runner == "example-worker"
        assert_not_enqueued(store, welcome, status=jobtable.Status.QUEUED)
