"""The worker side: the handler that runs a stored task call, and the runner that hosts it."""

import logging
from typing import Any

from django.db import close_old_connections
from django.tasks import TaskContext, TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils.json import normalize_json
from pydantic import JsonValue

import jobtable
from jobtable.contrib.django._backend import JobtableBackend
from jobtable.contrib.django._payload import TaskCall, task_kind
from jobtable.contrib.django._results import call_of, result_of, task_of


class TaskRaised(Exception):
    """Stands for a BaseException a task raised (SystemExit, KeyboardInterrupt) in a worker.

    jobtable fails the job with its internal message, as for any exception,
    instead of letting it end the worker's thread.
    """


def _handler(backend: JobtableBackend) -> jobtable.SyncHandler[JsonValue, TaskCall]:
    def run_task(ctx: jobtable.JobContext[JsonValue], call: TaskCall) -> JsonValue:
        record = backend.store.inspect(ctx.id)
        task_result = result_of(record, backend.alias)
        task = task_of(call_of(record), record)
        close_old_connections()
        task_started.send(type(backend), task_result=task_result)
        try:
            args: list[Any] = list(call.args)
            if task.takes_context:
                args.insert(0, TaskContext(task_result=task_result))
            value: JsonValue = normalize_json(task.call(*args, **call.kwargs))
        except Exception:
            object.__setattr__(task_result, "status", TaskResultStatus.FAILED)
            task_finished.send(type(backend), task_result=task_result)
            raise
        except BaseException as err:
            object.__setattr__(task_result, "status", TaskResultStatus.FAILED)
            task_finished.send(type(backend), task_result=task_result)
            raise TaskRaised(type(err).__name__) from err
        finally:
            close_old_connections()
        object.__setattr__(task_result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(task_result, "_return_value", value)
        task_finished.send(type(backend), task_result=task_result)
        return value

    return run_task


def build_runner(
    backend: JobtableBackend,
    *,
    queues: dict[str, int],
    name: str | None = None,
    logger: logging.Logger | None = None,
    **settings: Any,
) -> jobtable.Runner:
    """Returns a runner over backend's store whose handler runs the backend's Django tasks.

    The handler runs each task in one of the runner's threads (an ``async def``
    task on an event loop of its own, as ``Task.call`` does), between two
    ``close_old_connections()`` as a Django request is. A task's exception
    fails its job with ``jobtable.MESSAGE_INTERNAL`` and is logged with its
    traceback.

    Args:
        backend: The backend whose store and tasks the runner serves.
        queues: Each queue to consume, and its number of workers.
        name: The runner's name (see ``jobtable.Runner``).
        logger: Where the runner logs.
        **settings: The other options of ``jobtable.Runner``.

    Returns:
        The runner, not started.

    Raises:
        TypeError: As ``jobtable.Runner`` raises it for a bad setting.
        ValueError: As ``jobtable.Runner`` raises it for a bad setting.
    """
    runner = jobtable.Runner(backend.store, queues=queues, name=name, logger=logger, **settings)
    runner.handler(task_kind(next(iter(queues))))(_handler(backend))
    return runner
