"""``jobtable workflows list`` and ``show``, run as users run them: the console script.

The workflows are stored in-process through the public API; each command
runs in a process of its own, judged by its exit status and its output.
"""

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
    environ["COLUMNS"] = "200"  # wide enough that no id is cut
    return subprocess.run(
        [str(SCRIPT), *args, "--store", store_target],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


def stored(store_target: str, *names: str) -> list[jobtable.Workflow]:
    """Stores a two-job workflow (b after a) of each name, in order."""
    made = []
    with jobtable.Store.open(store_target) as store:
        for name in names:
            wf = jobtable.Workflow(name)
            a = wf.add(ping, 1)
            wf.add(ping, 2, after=[a])
            wf.enqueue(store)
            made.append(wf)
    return made


def test_list_shows_each_workflow_newest_first_with_its_state_and_counts(
    store_target: str,
) -> None:
    old, new = stored(store_target, "nightly", "hourly")
    with jobtable.Store.open(store_target) as store:
        store.cancel_workflow(old.id)
    shown = run(store_target, "workflows", "list")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.index(new.id) < shown.stdout.index(old.id)
    line = next(x for x in shown.stdout.splitlines() if old.id in x)
    assert "nightly" in line
    assert "cancelled" in line
    line = next(x for x in shown.stdout.splitlines() if new.id in x)
    assert "running" in line
    assert "queued 1" in line
    listed = json.loads(run(store_target, "workflows", "list", "--json").stdout)
    assert [w["id"] for w in listed] == [new.id, old.id]
    assert listed[1]["state"] == "cancelled"
    assert listed[1]["counts"]["cancelled"] == 2
    by_name = json.loads(
        run(store_target, "workflows", "list", "--name", "nightly", "--json").stdout
    )
    assert [w["id"] for w in by_name] == [old.id]


def test_list_pages_with_before(store_target: str) -> None:
    first, second, third = stored(store_target, "a", "b", "c")
    page = run(store_target, "workflows", "list", "--limit", "2")
    assert page.returncode == 0, page.stderr
    assert page.stdout.splitlines()[-1] == f"more: --before {second.id}"
    rest = run(store_target, "workflows", "list", "--limit", "2", "--before", second.id)
    assert first.id in rest.stdout
    assert third.id not in rest.stdout
    assert "more:" not in rest.stdout


def test_list_refuses_a_bad_limit_in_one_line(store_target: str) -> None:
    stored(store_target)  # the schema
    refused = run(store_target, "workflows", "list", "--limit", "0")
    assert refused.returncode == 1
    assert refused.stderr == "jobtable: error: workflows: limit must be 1 to 1000, got 0\n"


def test_list_says_when_no_workflow_matches(store_target: str) -> None:
    stored(store_target)  # the schema
    shown = run(store_target, "workflows", "list", "--name", "none")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "no workflows match\n"


def test_show_prints_every_job_with_its_status_and_dependencies(store_target: str) -> None:
    (wf,) = stored(store_target, "nightly")
    shown = run(store_target, "workflows", "show", wf.id)
    assert shown.returncode == 0, shown.stderr
    assert "nightly: queued 1, pending 1" in shown.stdout
    with jobtable.Store.open(store_target) as store:
        a, b = store.workflow(wf.id).jobs
    row_b = next(x for x in shown.stdout.splitlines() if b.id in x)
    assert "pending" in row_b
    assert "#1" in row_b
    graph = json.loads(run(store_target, "workflows", "show", wf.id, "--json").stdout)
    assert graph["jobs"][1] == {
        "id": b.id,
        "kind": "ping",
        "status": "pending",
        "dependencies": [a.id],
        "created_at": b.created_at.isoformat().replace("+00:00", "Z") if b.created_at else None,
        "started_at": None,
        "finished_at": None,
    }
    unknown = run(store_target, "workflows", "show", "no-such-workflow")
    assert unknown.returncode == 1
    assert unknown.stderr == "jobtable: error: workflow 'no-such-workflow' not found\n"
