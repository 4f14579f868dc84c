"""Django's task contract, run by a real jobtable worker, on SQLite and PostgreSQL.

After Django's tests/tasks (test_immediate_backend.py's outcomes, which a
worker produces here in another thread), with what jobtable changes: an
exception's text and traceback never reach the TaskResult.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import djtasks
import pytest
from django.tasks import Task, TaskResultStatus

import jobtable
from jobtable.contrib.django import JobtableBackend, JobtableTaskError, TaskFailed

Wait = Callable[..., None]


@pytest.mark.usefixtures("worker")
@pytest.mark.parametrize(
    "task", [djtasks.noop_task, djtasks.noop_task_async], ids=["sync", "async"]
)
def test_a_worker_runs_an_enqueued_task_to_success(
    task: Task[..., Any], wait_finished: Wait
) -> None:
    result = task.enqueue(1, two=3)
    wait_finished(result)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished is True
    assert result.return_value is None
    assert result.started_at is not None
    assert result.enqueued_at is not None
    assert result.finished_at is not None
    assert result.last_attempted_at is not None
    assert result.started_at >= result.enqueued_at
    assert result.finished_at >= result.started_at
    assert result.task == task
    assert result.args == [1]
    assert result.kwargs == {"two": 3}
    assert result.attempts == 1


@pytest.mark.usefixtures("worker")
def test_the_return_value_is_read_back(wait_finished: Wait) -> None:
    result = djtasks.calculate_meaning_of_life.enqueue()
    wait_finished(result)
    assert result.return_value == 42


@pytest.mark.usefixtures("worker")
async def test_async_enqueue_and_refresh_read_the_same_result(wait_finished: Wait) -> None:
    value: Any = {"a": [1, 2.5, None, "x"]}
    result = await djtasks.echo_async.aenqueue(value)
    assert result.status == TaskResultStatus.READY
    while not result.is_finished:
        await result.arefresh()
    assert result.return_value == value
    assert await djtasks.echo_async.aget_result(result.id) == result


@pytest.mark.usefixtures("worker")
def test_args_and_kwargs_round_trip_through_json(wait_finished: Wait) -> None:
    result = djtasks.echo.enqueue((1, 2), b"bytes", flag=True, nested={"k": [None, 1.5]})
    assert result.args == [[1, 2], "bytes"]  # Django normalizes: a tuple is a list
    wait_finished(result)
    assert result.return_value == {
        "args": [[1, 2], "bytes"],
        "kwargs": {"flag": True, "nested": {"k": [None, 1.5]}},
    }


@pytest.mark.usefixtures("worker")
def test_a_failed_task_keeps_its_exception_text_out_of_the_result(
    wait_finished: Wait, store: jobtable.Store, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="jobtable"):
        result = djtasks.failing_task_value_error.enqueue()
        wait_finished(result)
    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value
    [error] = result.errors
    assert isinstance(error, JobtableTaskError)
    assert error.exception_class is TaskFailed
    assert error.traceback == ""
    assert error.message == jobtable.MESSAGE_INTERNAL
    assert djtasks.SECRET not in repr(result)
    record = store.inspect(result.id)
    assert djtasks.SECRET not in record.model_dump_json()
    assert djtasks.SECRET in caplog.text  # logs aside: the worker's log has the traceback


@pytest.mark.usefixtures("worker")
def test_a_failure_raised_by_a_task_is_its_error_message(wait_finished: Wait) -> None:
    result = djtasks.declined.enqueue()
    wait_finished(result)
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert isinstance(error, JobtableTaskError)
    assert error.message == "The card was declined."
    assert error.traceback == ""


@pytest.mark.usefixtures("worker")
def test_a_task_raising_system_exit_fails_and_the_worker_goes_on(wait_finished: Wait) -> None:
    failed = djtasks.failing_task_system_exit.enqueue()
    wait_finished(failed)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.errors[0].traceback == ""
    assert djtasks.SECRET not in repr(failed)
    after = djtasks.calculate_meaning_of_life.enqueue()
    wait_finished(after)
    assert after.return_value == 42


@pytest.mark.usefixtures("worker")
def test_a_return_value_json_cannot_hold_fails_the_task(wait_finished: Wait) -> None:
    result = djtasks.complex_return_value.enqueue()
    wait_finished(result)
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is TaskFailed
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value


@pytest.mark.usefixtures("worker")
def test_a_task_that_takes_context_gets_its_result_and_attempt(wait_finished: Wait) -> None:
    result = djtasks.get_task_id.enqueue()
    wait_finished(result)
    assert result.return_value == result.id
    attempt = djtasks.context_attempt.enqueue()
    wait_finished(attempt)
    assert attempt.return_value == 1


@pytest.mark.usefixtures("worker")
def test_a_task_on_another_queue_runs_on_that_queue(
    wait_finished: Wait, store: jobtable.Store
) -> None:
    result = djtasks.on_queue_1.enqueue()
    wait_finished(result)
    assert result.return_value == "queue_1"
    assert result.task.queue_name == "queue_1"
    assert store.inspect(result.id).queue == "queue_1"


def test_the_worker_logs_django_task_signals(
    backend: JobtableBackend, wait_finished: Wait, caplog: pytest.LogCaptureFixture, Worker: Any
) -> None:
    with caplog.at_level(logging.DEBUG, logger="django.tasks"):
        result = djtasks.noop_task.enqueue()
        with Worker(backend, {"default": 1}):
            wait_finished(result)
    lines = [r.getMessage() for r in caplog.records if r.name == "django.tasks"]
    assert any("enqueued" in line and result.id in line for line in lines), lines
    assert any("state=RUNNING" in line and result.id in line for line in lines), lines
    assert any("state=SUCCESSFUL" in line and result.id in line for line in lines), lines


def test_the_stored_payload_is_the_call_as_json(store: jobtable.Store, backend: Any) -> None:
    result = djtasks.echo.enqueue(1, "two", three=[3])
    record = store.inspect(result.id)
    assert record.kind == "django.task"
    assert json.loads(json.dumps(record.payload)) == {
        "task": "djtasks.echo",
        "args": [1, "two"],
        "kwargs": {"three": [3]},
        "backend": "default",
        "run_after": None,
    }
