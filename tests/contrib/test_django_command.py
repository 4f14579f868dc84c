"""``manage.py jobtable_worker``: a real worker process runs the tasks, and stops on SIGTERM."""

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Callable

import djtasks
import pytest
from django.core.management import CommandError, call_command
from django.tasks import TaskResultStatus

from jobtable.contrib.django import JobtableBackend


@pytest.mark.slow
@pytest.mark.usefixtures("backend")
def test_the_worker_command_runs_tasks_until_sigterm(
    store_target: str,
    contrib_dir: pathlib.Path,
    tmp_path: pathlib.Path,
    wait_finished: Callable[..., None],
) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "djsettings",
        "PYTHONPATH": os.pathsep.join([str(contrib_dir), os.environ.get("PYTHONPATH", "")]),
        "JOBTABLE_DJANGO_STORE": store_target,
    }
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "django", "jobtable_worker", "--workers", "2"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            ok = djtasks.calculate_meaning_of_life.enqueue()
            failed = djtasks.failing_task_value_error.enqueue()
            on_1 = djtasks.on_queue_1.enqueue()
            wait_finished(ok, limit=60)
            wait_finished(failed, limit=60)
            wait_finished(on_1, limit=60)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    output = log.read_text()
    assert ok.return_value == 42
    assert on_1.return_value == "queue_1"  # both QUEUES run by default
    assert failed.status == TaskResultStatus.FAILED
    assert djtasks.SECRET not in repr(failed)
    assert "jobtable_worker: running 'default'" in output
    assert djtasks.SECRET in output  # logs aside: the traceback is in the worker's log


def test_the_worker_command_refuses_a_backend_that_is_not_jobtables(
    backend: JobtableBackend,
) -> None:
    with pytest.raises(CommandError, match="is a DummyBackend, not a"):
        call_command("jobtable_worker", backend="other")
    with pytest.raises(CommandError, match="doesn't exist"):
        call_command("jobtable_worker", backend="nope")


@pytest.mark.usefixtures("backend")
def test_the_worker_command_refuses_a_queue_the_backend_does_not_have() -> None:
    with pytest.raises(CommandError, match="queue 'elsewhere' is not in"):
        call_command("jobtable_worker", queues=["elsewhere"])
    with pytest.raises(CommandError, match="--workers must be at least 1"):
        call_command("jobtable_worker", workers=0)
