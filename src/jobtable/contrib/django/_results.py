"""Reads a jobtable job back as a Django TaskResult: status, times, return value and errors."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, TypeAlias

from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.tasks.exceptions import TaskResultDoesNotExist
from django.utils.module_loading import import_string
from typing_extensions import ParamSpec, TypeVar

import jobtable
from jobtable.contrib.django._payload import KIND_NAME, TaskCall

_P = ParamSpec("_P")
_R = TypeVar("_R")

AnyTask: TypeAlias = "Task[..., Any]"
"""A Django task of any arguments and return type."""

AnyResult: TypeAlias = "TaskResult[..., Any]"
"""A Django task result of any task."""

STATUSES = {
    jobtable.Status.PENDING: TaskResultStatus.READY,
    jobtable.Status.QUEUED: TaskResultStatus.READY,
    jobtable.Status.RUNNING: TaskResultStatus.RUNNING,
    jobtable.Status.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    jobtable.Status.FAILED: TaskResultStatus.FAILED,
    jobtable.Status.CANCELLED: TaskResultStatus.FAILED,
}
"""Django's status of a job in each jobtable status; Django has no cancelled, so it is FAILED.

A queued job is READY whether it is new, scheduled (run_after) or waiting
for a retry; so is a pending one, waiting for its workflow's dependencies.
"""


class TaskFailed(Exception):
    """The exception class every TaskError from jobtable names.

    jobtable stores no exception, neither its class nor its text: only its
    own message (``jobtable.MESSAGE_INTERNAL`` for an exception, a
    ``jobtable.Failure``'s message, ``"timed out"``...), which
    ``JobtableTaskError.message`` holds.
    """


# django-stubs declares TaskError unfrozen; Django's is frozen, and so must a subclass be.
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class JobtableTaskError(TaskError):  # type: ignore[misc]
    """One failed attempt of a task, as jobtable stored it.

    ``exception_class_path`` names TaskFailed and ``traceback`` is always
    empty: the exception's text and traceback go to the worker's log and
    nowhere else, since they may quote a secret. ``message`` is the stored
    message and ``attempt`` the attempt's number.
    """

    message: str
    attempt: int


TASK_FAILED_PATH = "jobtable.contrib.django.TaskFailed"
"""Where TaskFailed is imported from: what every JobtableTaskError's exception_class_path says."""


def _errors(record: jobtable.JobRecord) -> list[TaskError]:
    return [
        JobtableTaskError(
            exception_class_path=TASK_FAILED_PATH,
            traceback="",
            message=attempt.error,
            attempt=attempt.attempt,
        )
        for attempt in record.errors
    ]


def task_of(call: TaskCall, record: jobtable.JobRecord) -> AnyTask:
    """Returns the Task of a stored call: its function, with the job's priority, queue, run_after.

    Raises TaskResultDoesNotExist, naming the path, when the path is no
    longer a Task (the code changed since the enqueue).
    """
    try:
        found = import_string(call.task)
    except ImportError as err:
        raise TaskResultDoesNotExist(
            f"task result {record.id!r}: cannot import its task {call.task!r}"
        ) from err
    if not isinstance(found, Task):
        raise TaskResultDoesNotExist(f"task result {record.id!r}: {call.task!r} is not a Task")
    changes: dict[str, Any] = {
        "priority": -record.priority,
        "queue_name": record.queue,
        "backend": call.backend,
        "run_after": None
        if call.run_after is None
        else datetime.datetime.fromisoformat(call.run_after),
    }
    return dataclasses.replace(found, **changes)


def call_of(record: jobtable.JobRecord) -> TaskCall:
    """Returns the stored call of a record; TaskResultDoesNotExist if it is no Django task's job."""
    if record.kind != KIND_NAME:
        raise TaskResultDoesNotExist(f"task result {record.id!r}: a {record.kind!r} job, no task")
    return TaskCall.model_validate(record.payload)


def result_of(record: jobtable.JobRecord, alias: str) -> AnyResult:
    """Returns the TaskResult of a job's record, as read through the backend of alias."""
    call = call_of(record)
    worker_ids = [] if record.runner is None else [record.runner] * record.attempt
    # A claim reads the clock as it is built, before it reaches the database,
    # so one that raced the enqueue can record a start a moment before the
    # job's creation; Django promises started_at >= enqueued_at.
    started_at = record.started_at
    if started_at is not None and started_at < record.created_at:
        started_at = record.created_at
    result: AnyResult = TaskResult(
        task=task_of(call, record),
        id=record.id,
        status=STATUSES[record.status],
        enqueued_at=record.created_at,
        started_at=started_at,
        finished_at=record.finished_at,
        last_attempted_at=started_at,
        args=call.args,
        kwargs=call.kwargs,
        backend=alias,
        errors=_errors(record),
        worker_ids=worker_ids,
    )
    if record.status is jobtable.Status.SUCCEEDED:
        object.__setattr__(result, "_return_value", record.result)
    return result


def new_result(
    task: Task[_P, _R],
    job_id: str,
    args: list[Any],
    kwargs: dict[str, Any],
    alias: str,
    enqueued_at: datetime.datetime | None,
) -> TaskResult[_P, _R]:
    """The TaskResult of a job just enqueued: READY, enqueued_at None until it is stored."""
    return TaskResult(
        task=task,
        id=job_id,
        status=TaskResultStatus.READY,
        enqueued_at=enqueued_at,
        started_at=None,
        finished_at=None,
        last_attempted_at=None,
        args=args,
        kwargs=kwargs,
        backend=alias,
        errors=[],
        worker_ids=[],
    )
