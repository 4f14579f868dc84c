"""The ``jobtable`` command and ``jobtable worker`` as a PostgreSQL role with DML rights only.

The schema's owner migrates it and runs ``jobtable grant ROLE --apply``;
the worker process and every other command then run as that role (see
tests/test_least_privilege.py for what it may and may not do).
"""

import base64
import json
import os
import pathlib
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from pg_roles import Roles, granted, owner_and_app
from test_cli import SCRIPT, one_line_error, output, run_cli

import jobtable

pytestmark = pytest.mark.slow

KEY1 = "k1:" + base64.b64encode(bytes(range(32))).decode()
KEY2 = "k2:" + base64.b64encode(bytes(range(1, 33))).decode()
ping = jobtable.Kind("ping", int, int)
WORKER = "dml-worker"


@pytest.fixture
def roles(pg_server: str) -> Iterator[Roles]:
    """A migrated schema, its owner, and a role holding only what the grant gives."""
    with granted(pg_server) as made:
        yield made


def app_module(folder: pathlib.Path) -> None:
    """Writes app.py: a runner on APP_STORE whose handler fails a negative payload."""
    (folder / "app.py").write_text(
        "import os\n"
        "import jobtable\n"
        "store = jobtable.Store.open(os.environ['APP_STORE'], migrate=False)\n"
        f"runner = jobtable.Runner(store, workers=2, name={WORKER!r})\n"
        "ping = jobtable.Kind('ping', int, int)\n"
        "@runner.handler(ping)\n"
        "def handle(ctx: jobtable.JobContext[int], payload: int) -> int:\n"
        "    if payload < 0:\n"
        "        raise jobtable.Failure('negative')\n"
        "    return payload\n"
    )


def until(check: Callable[[], bool], worker: subprocess.Popen[str]) -> None:
    """Polls check() until true; fails after 60 s, or at once when the worker died."""
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, "the worker never got there"
        assert worker.poll() is None, worker.communicate()
        time.sleep(0.1)


def test_the_worker_and_every_command_run_as_a_role_with_dml_rights_only(
    roles: Roles, tmp_path: pathlib.Path
) -> None:
    app_module(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    env.update(APP_STORE=roles.app_url, JOBTABLE_SECRET_KEYS=KEY1)
    worker = subprocess.Popen(
        [str(SCRIPT), "worker", "app:runner"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cli_env = {"JOBTABLE_STORE": roles.app_url, "JOBTABLE_SECRET_KEYS": f"{KEY2},{KEY1}"}

    def cli(*args: str) -> str:
        return output(run_cli(*args, env=cli_env))

    try:
        until(lambda: run_cli("health", "--runner", WORKER, env=cli_env).returncode == 0, worker)
        with jobtable.Store.open(roles.app_url, migrate=False) as store:
            good, bad = ping.enqueue(store, 1), ping.enqueue(store, -1)
            later = ping.enqueue(store, 2, run_at=store.clock().replace(year=2100))
            until(lambda: store.get(bad).status is jobtable.Status.FAILED, worker)
            until(lambda: store.get(good).status is jobtable.Status.SUCCEEDED, worker)
            flow = jobtable.Workflow("least privilege")
            node = flow.add(ping, 3)
            flow.enqueue(store)
            until(lambda: store.get(node.id).status is jobtable.Status.SUCCEEDED, worker)
        assert WORKER in cli("runners")
        assert "healthy" in cli("health")
        cli("stats")
        assert good in cli("jobs", "list")
        cli("jobs", "show", bad)
        cli("jobs", "retry", bad)
        cli("jobs", "cancel", later)
        cli("jobs", "retry-failed")
        cli("queues", "pause", "default")
        cli("queues", "set", "default", "--concurrency", "2")
        assert "default" in cli("queues", "list")
        cli("queues", "clear", "default")
        cli("queues", "resume", "default")
        assert "least privilege" in cli("workflows", "list")
        cli("workflows", "show", flow.id)
        cli("workflows", "cancel", flow.id)
        cli("secrets", "rotate")
        cli("jobs", "delete", good)
        cli("prune", "--older-than", "0s")
        assert json.loads(cli("migrate", "--check", "--json"))["pending"] is False
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "permission denied" not in err
    assert run_cli("health", "--runner", WORKER, env=cli_env).returncode == 1


def test_grant_prints_the_statements_and_runs_them_with_apply(pg_server: str) -> None:
    with owner_and_app(pg_server) as made:
        jobtable.Store.migrate(made.owner_url)
        dry = run_cli("grant", made.app, "--store", made.owner_url)
        printed = output(dry)
        assert "not run (add --apply" in dry.stderr
        assert "jobtable grant ROLE" in one_line_error(run_cli("stats", "--store", made.app_url))
        applied = run_cli("grant", made.app, "--apply", "--json", "--store", made.owner_url)
        again = run_cli("grant", made.app, "--apply", "--store", made.owner_url)
        assert output(again) == printed
        assert f"-- ran: 4 statements granting to {made.app}" in again.stderr
        output(run_cli("stats", "--store", made.app_url))
    lines = printed.splitlines()
    assert lines[0] == f"GRANT USAGE ON SCHEMA {made.schema} TO {made.app};"
    assert all(line.startswith("GRANT ") and line.endswith(";") for line in lines)
    report = json.loads(output(applied))
    assert report["applied"] is True
    assert [f"{s};" for s in report["statements"]] == lines


def test_grant_on_sqlite_is_a_one_line_error(tmp_path: pathlib.Path) -> None:
    jobtable.Store.open(tmp_path / "jobs.db").close()
    error = one_line_error(run_cli("grant", "app", "--store", str(tmp_path / "jobs.db")))
    assert "SQLite" in error
    assert "no roles" in error
