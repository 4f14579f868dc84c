"""Django's task contract for enqueue and get_result, on SQLite and PostgreSQL.

After Django's tests/tasks (test_tasks.py, test_dummy_backend.py): what
holds for a backend that stores results (supports_get_result), defers
(supports_defer), runs async tasks and orders by priority. Jobs are run one
at a time with the runner's run_next, where order is what is tested.
"""

import dataclasses
import datetime
import pickle
from typing import Any

import djtasks
import pytest
from django.tasks import TaskResultStatus, default_task_backend, task_backends
from django.tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
from django.test import override_settings
from django.utils import timezone

import jobtable
from jobtable.contrib.django import JobtableBackend, build_runner, close_stores


def test_the_backend_is_the_configured_jobtable_backend(backend: JobtableBackend) -> None:
    assert default_task_backend.alias == "default"
    assert isinstance(task_backends["default"], JobtableBackend)
    assert backend.supports_defer is True
    assert backend.supports_async_task is True
    assert backend.supports_get_result is True
    assert backend.supports_priority is True
    assert backend.queues == {"default", "queue_1"}


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(
    "task", [djtasks.noop_task, djtasks.noop_task_async], ids=["sync", "async"]
)
def test_enqueue_returns_a_ready_result(task: Any, store: jobtable.Store) -> None:
    result = task.enqueue(1, two=3)
    assert result.status == TaskResultStatus.READY
    assert result.is_finished is False
    assert result.started_at is None
    assert result.finished_at is None
    assert result.enqueued_at is not None
    with pytest.raises(ValueError, match="Task has not finished yet"):
        _ = result.return_value
    assert result.task == task
    assert result.args == [1]
    assert result.kwargs == {"two": 3}
    assert result.errors == []
    assert result.worker_ids == []
    assert store.get(result.id).status == jobtable.Status.QUEUED


@pytest.mark.usefixtures("backend")
async def test_aenqueue_returns_a_ready_result() -> None:
    result = await djtasks.noop_task.aenqueue()
    assert result.status == TaskResultStatus.READY
    assert result.args == []
    assert result.kwargs == {}
    assert await default_task_backend.aget_result(result.id) == result


@pytest.mark.usefixtures("backend")
def test_get_result_reads_what_enqueue_returned() -> None:
    result = default_task_backend.enqueue(djtasks.noop_task, [], {})
    assert default_task_backend.get_result(result.id) == result
    assert djtasks.noop_task.get_result(result.id) == result
    before = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == before


@pytest.mark.usefixtures("backend")
async def test_an_unknown_result_does_not_exist() -> None:
    with pytest.raises(TaskResultDoesNotExist):
        djtasks.noop_task.get_result("123")
    with pytest.raises(TaskResultDoesNotExist):
        await djtasks.noop_task.aget_result("123")
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result("a\x00b")


@pytest.mark.usefixtures("backend")
def test_a_result_of_another_task_is_a_mismatch() -> None:
    result = djtasks.noop_task_async.enqueue()
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        djtasks.noop_task.get_result(result.id)


def test_a_job_of_another_kind_is_no_task_result(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    other = jobtable.Kind("thumbnail", int, int)
    job_id = other.enqueue(store, 1)
    with pytest.raises(TaskResultDoesNotExist, match="thumbnail"):
        backend.get_result(job_id)


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((datetime.datetime.now(datetime.UTC),), {}, TypeError),  # Django: "Unsupported type"
        (({1, 2},), {}, TypeError),
        ((), {"d": {1: "int key"}}, jobtable.PayloadError),  # JSON keys are text: no round trip
        ((float("nan"),), {}, jobtable.PayloadError),
    ],
    ids=["datetime", "set", "int-key", "nan"],
)
def test_arguments_json_cannot_round_trip_are_refused_and_nothing_is_stored(
    args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], store: jobtable.Store
) -> None:
    with pytest.raises(error):
        djtasks.noop_task.enqueue(*args, **kwargs)
    assert store.counts() == {}


@pytest.mark.usefixtures("backend")
async def test_aenqueue_refuses_what_enqueue_refuses(store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match="Unsupported type"):
        await djtasks.noop_task.aenqueue(datetime.datetime.now(datetime.UTC))
    assert await store.acounts() == {}


@pytest.mark.usefixtures("backend")
def test_priority_is_validated_in_djangos_range() -> None:
    bad: Any
    for bad in (TASK_MIN_PRIORITY - 1, TASK_MAX_PRIORITY + 1, 3.1):
        with pytest.raises(InvalidTask, match="priority must be a whole number"):
            djtasks.noop_task.using(priority=bad)


async def test_a_higher_django_priority_runs_first(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    low = djtasks.noop_task.using(priority=-100).enqueue()
    default = djtasks.noop_task.enqueue()
    high = djtasks.noop_task.using(priority=100).enqueue()
    assert store.inspect(high.id).priority == -100  # jobtable runs lower first
    assert backend.get_result(high.id).task.priority == 100
    runner = build_runner(backend, queues={"default": 1})
    assert [await runner.run_next() for _ in range(3)] == [high.id, default.id, low.id]


async def test_run_after_defers_the_job_until_then(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    later = timezone.now() + datetime.timedelta(hours=1)
    deferred = djtasks.noop_task.using(run_after=later).enqueue()
    assert store.inspect(deferred.id).run_at == later.replace(microsecond=later.microsecond)
    assert backend.get_result(deferred.id).task.run_after == later
    assert backend.get_result(deferred.id).status == TaskResultStatus.READY
    runner = build_runner(backend, queues={"default": 1})
    assert await runner.run_next() is None
    past = djtasks.noop_task.using(run_after=timezone.now() - datetime.timedelta(seconds=1))
    ready = past.enqueue()
    assert await runner.run_next() == ready.id


def test_a_naive_run_after_without_use_tz_is_in_the_current_time_zone(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    naive = datetime.datetime(2030, 1, 1, 12, 0)
    with override_settings(USE_TZ=False, TIME_ZONE="Europe/Paris"):
        result = djtasks.noop_task.using(run_after=naive).enqueue()
        expected = timezone.make_aware(naive)
    assert store.inspect(result.id).run_at == expected
    assert expected.utcoffset() == datetime.timedelta(hours=1)


def test_a_cancelled_job_reads_failed(backend: JobtableBackend, store: jobtable.Store) -> None:
    result = djtasks.noop_task.enqueue()
    assert store.cancel(result.id) == jobtable.CancelResult.CANCELLED
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.is_finished is True


@pytest.mark.usefixtures("backend")
def test_run_after_must_be_aware() -> None:
    with pytest.raises(InvalidTask, match="run_after must be an aware datetime"):
        djtasks.noop_task.using(run_after=datetime.datetime.now())


@pytest.mark.usefixtures("backend")
def test_a_queue_not_in_queues_is_refused(store: jobtable.Store) -> None:
    with pytest.raises(InvalidTask, match="Queue 'queue-2' is not valid for backend"):
        djtasks.noop_task.using(queue_name="queue-2")
    assert store.counts() == {}


async def test_a_worker_runs_only_its_queues(
    backend: JobtableBackend, store: jobtable.Store
) -> None:
    on_1 = djtasks.on_queue_1.enqueue()
    assert store.inspect(on_1.id).queue == "queue_1"
    default_only = build_runner(backend, queues={"default": 1})
    assert await default_only.run_next() is None
    assert await build_runner(backend, queues={"queue_1": 1}).run_next() == on_1.id


@pytest.mark.usefixtures("backend")
def test_a_task_result_pickles() -> None:
    result = djtasks.noop_task.enqueue()
    assert pickle.loads(pickle.dumps(result)) == result


def test_max_attempts_retries_a_failed_task(
    tasks_settings: Any, wait_finished: Any, Worker: Any
) -> None:
    with override_settings(TASKS=tasks_settings(MAX_ATTEMPTS=2)):
        backend = task_backends["default"]
        assert isinstance(backend, JobtableBackend)
        result = djtasks.failing_task_value_error.enqueue()
        assert backend.store.inspect(result.id).max_attempts == 2
        with Worker(backend, {"default": 1}):
            wait_finished(result)
        assert result.status == TaskResultStatus.FAILED
        assert [e.attempt for e in result.errors] == [1, 2]  # type: ignore[attr-defined]
        assert result.attempts == 2
    close_stores()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "OPTIONS\\['STORE'\\] must be"),
        ({"STORE": ""}, "OPTIONS\\['STORE'\\] must be"),
        ({"STORE": "x.db", "STOR": 1}, "unknown OPTIONS \\['STOR'\\]"),
        ({"STORE": "x.db", "MAX_ATTEMPTS": 0}, "OPTIONS\\['MAX_ATTEMPTS'\\] must be an int"),
    ],
)
def test_bad_options_name_what_is_wrong(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JobtableBackend("default", {"OPTIONS": options})
