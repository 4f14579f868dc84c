"""What a first-time user types: ``--store`` before the command, a seq or a cut id for an
id, a kind where the worker wants a runner.

Each command runs as users run it: the console script in a subprocess.
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


def run_cli(*args: str, store_env: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the console script with args; JOBTABLE_STORE only when store_env gives it."""
    environ = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    if store_env is not None:
        environ["JOBTABLE_STORE"] = store_env
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=environ, timeout=120
    )


def queued(result: subprocess.CompletedProcess[str]) -> int:
    """The default queue's queued count from `stats --json`, which must have succeeded."""
    assert result.returncode == 0, result.stderr
    [default] = json.loads(result.stdout)["queues"]
    count: int = default["counts"]["queued"]
    return count


def test_store_before_the_command_opens_that_store(
    store: jobtable.Store, store_target: str, tmp_path: pathlib.Path
) -> None:
    ping.enqueue_many(store, [1, 2, 3])
    assert queued(run_cli("--store", store_target, "stats", "--json")) == 3
    # It wins over JOBTABLE_STORE, as a command's own --store does.
    missing = os.fspath(tmp_path / "missing.db")
    assert queued(run_cli("--store", store_target, "stats", "--json", store_env=missing)) == 3
    # The command's own --store wins over the one before it.
    result = run_cli("--store", store_target, "stats", "--json", "--store", missing)
    assert result.returncode == 1
    assert "missing.db" in result.stderr
    assert not (tmp_path / "missing.db").exists()


def test_store_before_worker_is_refused_since_the_runner_brings_its_own(
    store_target: str,
) -> None:
    result = run_cli("--store", store_target, "worker", "no_such_module:runner")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "jobtable: error: jobtable worker runs on its runner's store: --store is not used;"
        " leave it out"
    ]


def test_a_seq_or_a_cut_id_given_for_an_id_is_named_as_such(
    store: jobtable.Store, store_target: str
) -> None:
    job_id = ping.enqueue(store, 1)
    seq = str(store.inspect(job_id).seq)
    for command in ("show", "cancel"):
        result = run_cli("jobs", command, seq, "--store", store_target)
        assert result.returncode == 1
        assert result.stderr == (
            f"jobtable: error: job {seq!r} not found; it looks like a seq: give the job's id,"
            " which `jobtable jobs list` shows beside it\n"
        )
        result = run_cli("jobs", command, job_id[:8], "--store", store_target)
        assert result.returncode == 1
        assert result.stderr == (
            f"jobtable: error: job {job_id[:8]!r} not found; cut short? a job id is 22"
            " characters, this is 8\n"
        )
    assert store.get(job_id).status is jobtable.Status.QUEUED
    # An id of the full length that is no job's gets no hint.
    result = run_cli("jobs", "show", "x" * 22, "--store", store_target)
    assert result.stderr == f"jobtable: error: job {'x' * 22!r} not found\n"


def test_a_worker_pointed_at_a_kind_is_told_to_name_the_runner(tmp_path: pathlib.Path) -> None:
    (tmp_path / "tasks.py").write_text(
        "import jobtable\n\nthumbnail = jobtable.Kind('thumbnail', int, int)\n"
    )
    result = subprocess.run(
        [str(SCRIPT), "worker", "tasks:thumbnail"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr == (
        "jobtable: error: worker: tasks:thumbnail is the kind 'thumbnail' (name the Runner its"
        " handler is attached to), want a jobtable.Runner\n"
    )
