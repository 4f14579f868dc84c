"""The ``jobtable`` command through PgBouncer in transaction mode.

The commands take ``--pooled`` and ``--listen-url`` (or JOBTABLE_POOLED and
JOBTABLE_LISTEN_URL) and open the store with them: through a pooler that
shares one server connection with another client's prepared statements,
``migrate``, the listings, a retry and ``worker`` (the application's runner
on a pooled store, from the same environment) all work. The dashboard's
test is tests/dashboard/test_dashboard_pooled.py. Starts processes (slow).
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pgbouncer_server
import pytest
from pgbouncer_server import PooledURLs

import jobtable

pytestmark = pytest.mark.slow

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
DEADLINE = 60.0
"""Seconds a test waits for the worker to end its jobs."""

halve = jobtable.Kind("halve", int, int)

TASKS = """\
import os
import jobtable
store = jobtable.Store.open(
    os.environ["JOBTABLE_STORE"],
    pooled=os.environ.get("JOBTABLE_POOLED") == "1",
    listen_url=os.environ.get("JOBTABLE_LISTEN_URL"),
)
runner = jobtable.Runner(store, workers=2, name="pooled-worker", poll_interval=0.2)
halve = jobtable.Kind("halve", int, int)

@runner.handler(halve)
def run(ctx: jobtable.JobContext[int], payload: int) -> int:
    if payload % 2:
        raise jobtable.Failure("odd")
    return payload // 2
"""
"""The application's runner: its store from the same environment as the commands'."""


def environ(urls: PooledURLs) -> dict[str, str]:
    """The environment of a deploy behind the pooler: the store, pooled, listening directly."""
    found = {k: v for k, v in os.environ.items() if not k.startswith("JOBTABLE_")}
    return {
        **found,
        "JOBTABLE_STORE": urls.pooled,
        "JOBTABLE_POOLED": "1",
        "JOBTABLE_LISTEN_URL": urls.direct,
    }


def run_cli(env: dict[str, str], *args: str) -> str:
    """The stdout of ``jobtable *args``, which must succeed and print nothing on stderr."""
    done = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert (done.returncode, done.stderr) == (0, ""), done
    return done.stdout


def wait_for(check: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    """Waits until check() is true while process runs; fails after DEADLINE seconds."""
    start = time.monotonic()
    while not check():
        assert process.poll() is None, "the worker died"
        assert time.monotonic() - start < DEADLINE, f"timed out waiting for {check}"
        time.sleep(0.05)


def test_the_commands_and_a_worker_run_through_pgbouncer(
    pooled_pg: PooledURLs, pgbouncer: pgbouncer_server.Bouncer, tmp_path: pathlib.Path
) -> None:
    env = environ(pooled_pg)
    logged = len(pgbouncer.server_log())
    assert "created the schema" in run_cli(env, "migrate")
    # The options given on the command line do as the environment does.
    bare = {k: v for k, v in env.items() if k not in ("JOBTABLE_POOLED", "JOBTABLE_LISTEN_URL")}
    args = ("--pooled", "--listen-url", pooled_pg.direct)
    assert "nothing to do" in run_cli(bare, "migrate", *args)
    with jobtable.Store.open(pooled_pg.pooled, pooled=True, listen_url=pooled_pg.direct) as store:
        ids = halve.enqueue_many(store, [2, 3, 4])
        (tmp_path / "app.py").write_text(TASKS)
        process = subprocess.Popen(
            [str(SCRIPT), "worker", "app:runner"], cwd=tmp_path, env=env, text=True
        )
        try:
            done = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED)
            wait_for(lambda: all(store.get(i).status in done for i in ids), process)
            listed = json.loads(run_cli(env, "jobs", "list", "--json"))
            assert {(j["id"], j["status"]) for j in listed} == {
                (ids[0], "succeeded"), (ids[1], "failed"), (ids[2], "succeeded")
            }  # fmt: skip
            assert json.loads(run_cli(env, "jobs", "show", ids[0], "--json"))["result"] == 1
            [runner] = json.loads(run_cli(bare, "runners", "--json", *args))
            assert runner["name"] == "pooled-worker"
            [queue] = json.loads(run_cli(env, "stats", "--json"))["queues"]
            assert queue["counts"] == {"succeeded": 2, "failed": 1}
            assert json.loads(run_cli(env, "queues", "list", "--json"))[0]["name"] == "default"
            assert "retried" in run_cli(bare, "jobs", "retry", ids[1], *args)
            wait_for(lambda: store.get(ids[1]).status in done, process)
            assert store.inspect(ids[1]).attempt == 2
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(60) == 0
    # Nothing listened through PgBouncer, and no statement clashed with another client's.
    log = pgbouncer.server_log()[logged:]
    assert "not linked" not in log
    assert "already exists" not in log


@pytest.mark.parametrize(
    ("args", "env"),
    # The other two ways (JOBTABLE_POOLED, --listen-url) run through PgBouncer above.
    [(("--pooled",), {}), ((), {"JOBTABLE_LISTEN_URL": "postgresql://db/app"})],
)
def test_every_store_command_passes_pooled_and_listen_url_on_to_the_store(
    tmp_path: pathlib.Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    # A SQLite file refuses both: the refusal shows they reached Store.open (Store.migrate).
    path = tmp_path / "jobs.db"
    jobtable.Store.open(path).close()
    base = {k: v for k, v in os.environ.items() if not k.startswith("JOBTABLE_")}
    commands = [
        ("stats",), ("runners",), ("migrate",), ("jobs", "list"), ("jobs", "cancel", "x"),
        ("queues", "list"), ("queues", "pause", "q"), ("workflows", "list"),
        ("secrets", "rotate"), ("dashboard",), ("health",), ("signal", "name", "key"),
    ]  # fmt: skip
    pooled = "--pooled" in args or "JOBTABLE_POOLED" in env
    for command in commands:
        if command == ("migrate",) and not pooled:
            continue  # migrate listens to nothing: it takes --listen-url but does not use it
        done = subprocess.run(
            [str(SCRIPT), *command, "--store", str(path), *args],
            capture_output=True,
            text=True,
            env={**base, **env},
            timeout=120,
        )
        assert done.returncode == 1, (command, done)
        assert "are for a PostgreSQL URL" in done.stderr, (command, done.stderr)
