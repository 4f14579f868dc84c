"""`jobtable jobs show` prints a workflow job's links; `jobtable workflows cancel` cancels it."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import jobtable

pytestmark = pytest.mark.slow

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
ping = jobtable.Kind("ping", int, int)


def run(store_target: str, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    return subprocess.run(
        [str(SCRIPT), *args, "--store", store_target],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


def test_show_prints_the_workflow_its_dependencies_and_dependents(store_target: str) -> None:
    wf = jobtable.Workflow("nightly")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    with jobtable.Store.open(store_target) as store:
        wf.enqueue(store)
    shown = run(store_target, "jobs", "show", b.id)
    assert shown.returncode == 0, shown.stderr
    assert f"workflow nightly ({wf.id})" in shown.stdout
    assert "pending" in shown.stdout
    assert a.id in shown.stdout
    record = json.loads(run(store_target, "jobs", "show", a.id, "--json").stdout)
    assert record["workflow"]["dependents"] == [{"id": b.id, "kind": "ping", "status": "pending"}]


def test_workflows_cancel_cancels_every_unfinished_job(store_target: str) -> None:
    wf = jobtable.Workflow("nightly")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    with jobtable.Store.open(store_target) as store:
        wf.enqueue(store)
    done = run(store_target, "workflows", "cancel", wf.id, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cancelled": 2}
    with jobtable.Store.open(store_target) as store:
        assert store.get(b.id).status is jobtable.Status.CANCELLED
    unknown = run(store_target, "workflows", "cancel", "no-such-workflow")
    assert unknown.returncode == 1
    assert "workflow 'no-such-workflow' not found" in unknown.stderr


def test_retry_of_a_blocked_job_says_blocked_and_names_the_dependency(store_target: str) -> None:
    wf = jobtable.Workflow("nightly")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    with jobtable.Store.open(store_target) as store:
        wf.enqueue(store)
        store.delete(a.id)
    retried = run(store_target, "jobs", "retry", b.id)
    assert retried.returncode == 0, retried.stderr
    assert f"blocked: dependency {a.id} deleted" in " ".join(retried.stdout.split())
    as_json = run(store_target, "jobs", "retry", b.id, "--json")
    assert json.loads(as_json.stdout) == {b.id: "blocked"}
    shown = run(store_target, "jobs", "show", b.id)
    assert f"dependency {a.id} deleted" in shown.stdout
