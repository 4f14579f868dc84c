"""Django tasks in a jobtable.Workflow, on SQLite and PostgreSQL: what the backend reads of them.

django.tasks has no workflow: an app stores its tasks' calls as jobs of a
``jobtable.Workflow`` through ``TASK_KIND``, and the backend's get_result
reads them as any other task's, a pending one (waiting for its
dependencies) as READY.
"""

import djtasks
import pytest
from django.tasks import TaskResultStatus

import jobtable
from jobtable.contrib.django import TASK_KIND, JobtableBackend, TaskCall, build_runner


def call_of(task: object, *args: int) -> TaskCall:
    path = getattr(task, "module_path")  # noqa: B009
    return TaskCall(task=path, args=list(args), kwargs={}, backend="default")


async def test_a_pending_workflow_task_reads_ready_until_its_dependency_ran(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    wf = jobtable.Workflow("signup")
    first = wf.add(TASK_KIND, call_of(djtasks.echo, 1), queue="default")
    then = wf.add(TASK_KIND, call_of(djtasks.echo, 2), after=[first], queue="default")
    wf.enqueue(store)

    assert store.get(then.id).status == jobtable.Status.PENDING
    waiting = await backend.aget_result(then.id)
    assert waiting.status == TaskResultStatus.READY
    assert waiting.is_finished is False

    runner = build_runner(backend, queues={"default": 1})
    assert await runner.run_next() == first.id
    assert await runner.run_next() == then.id
    done = await backend.aget_result(then.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == {"args": [2], "kwargs": {}}


@pytest.mark.usefixtures("backend")
async def test_a_workflow_task_cancelled_by_its_failed_dependency_reads_failed(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    wf = jobtable.Workflow("signup")
    first = wf.add(TASK_KIND, call_of(djtasks.failing_task_value_error), queue="default")
    then = wf.add(TASK_KIND, call_of(djtasks.echo, 2), after=[first], queue="default")
    wf.enqueue(store)

    assert await build_runner(backend, queues={"default": 1}).run_next() == first.id
    assert store.get(then.id).status == jobtable.Status.CANCELLED
    assert (await backend.aget_result(then.id)).status == TaskResultStatus.FAILED
