"""The tasks the Django backend's tests enqueue, after Django's own tests/tasks/tasks.py."""

from __future__ import annotations

import datetime
import time
from typing import Any

from django.tasks import TaskContext, task

import jobtable

SECRET = "tok-3f9a-very-secret"
"""Planted in an exception's text: it must never reach a TaskResult or the store."""


@task()
def noop_task(*args: Any, **kwargs: Any) -> None:
    return None


@task()
async def noop_task_async(*args: Any, **kwargs: Any) -> None:
    return None


@task()
def calculate_meaning_of_life() -> int:
    return 42


@task()
def echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"args": list(args), "kwargs": kwargs}


@task()
async def echo_async(value: Any) -> Any:
    return value


@task()
def failing_task_value_error() -> None:
    raise ValueError(f"This task failed due to ValueError: {SECRET}")


@task()
def failing_task_system_exit() -> None:
    raise SystemExit(f"This task failed due to SystemExit: {SECRET}")


@task()
def complex_return_value() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@task(takes_context=True)
def get_task_id(context: TaskContext[Any, Any]) -> str:
    return context.task_result.id


@task(takes_context=True)
def context_attempt(context: TaskContext[Any, Any]) -> int:
    return context.attempt


@task(queue_name="queue_1")
def on_queue_1() -> str:
    return "queue_1"


@task()
def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


@task()
def declined() -> None:
    raise jobtable.Failure("The card was declined.")
