"""JobtableBackend: Django's task backend over a jobtable store."""

from __future__ import annotations

import datetime
import threading
from typing import Any, NamedTuple

import pydantic
from django.db import connections, transaction
from django.tasks import Task, TaskResult
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils import timezone
from django.utils.json import normalize_json
from typing_extensions import ParamSpec, TypeVar

import jobtable
from jobtable._enqueue import Binding, Named
from jobtable._options import EnqueueOptions
from jobtable._values import new_id, timestamp
from jobtable.contrib.django._payload import TASK_KIND, TaskCall
from jobtable.contrib.django._results import AnyResult, AnyTask, new_result, result_of

_P = ParamSpec("_P")
_R = TypeVar("_R")

_stores: dict[str, jobtable.Store] = {}
_stores_lock = threading.Lock()


def shared_store(target: str) -> jobtable.Store:
    """Returns the process's one store for target, opening it on first use.

    Django makes a backend per thread; they all share one store, since a store
    is safe from any thread and costs connections and threads.

    Args:
        target: What ``jobtable.Store.open`` takes.

    Returns:
        The shared store.

    Raises:
        StoreError: As ``jobtable.Store.open`` raises it.
    """
    with _stores_lock:
        store = _stores.get(target)
        if store is None:
            store = _stores[target] = jobtable.Store.open(target)
        return store


def close_stores() -> None:
    """Closes every store shared_store opened; the next use opens them again."""
    with _stores_lock:
        stores = list(_stores.values())
        _stores.clear()
    for store in stores:
        store.close()


class _Job(NamedTuple):
    """A task call checked and named, ready to be enqueued now or at commit."""

    id: str
    call: TaskCall
    options: EnqueueOptions
    binding: Binding


class JobtableBackend(BaseTaskBackend):
    """Runs Django tasks as jobtable jobs; ``manage.py jobtable_worker`` runs them.

    OPTIONS: ``STORE`` (required), what ``jobtable.Store.open`` takes: a
    SQLite path or a ``postgresql://`` URL; ``DATABASE``, the Django database
    alias whose transactions an enqueue follows (``"default"``);
    ``ENQUEUE_ON_COMMIT`` (True): inside ``transaction.atomic()`` on that
    database, the job is stored when the transaction commits and never if it
    rolls back; ``MAX_ATTEMPTS`` (1): how many times a job may run.

    A task's priority (Django: -100 to 100, higher first) is stored negated,
    since jobtable runs lower first; its queue_name is the job's queue; its
    run_after the job's run_at.

    Args:
        alias: The backend's name in Django's TASKS setting.
        params: Its entry of the TASKS setting, with OPTIONS as above.

    Raises:
        ValueError: An unknown option, a STORE that is not a non-empty str,
            or a MAX_ATTEMPTS that is not an int of at least 1.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        options = {key.upper(): value for key, value in self.options.items()}
        unknown = set(options) - {"STORE", "DATABASE", "ENQUEUE_ON_COMMIT", "MAX_ATTEMPTS"}
        if unknown:
            raise ValueError(f"TASKS[{alias!r}]: unknown OPTIONS {sorted(unknown)}")
        target = options.get("STORE")
        if not isinstance(target, str) or not target:
            raise ValueError(
                f"TASKS[{alias!r}]: OPTIONS['STORE'] must be a SQLite path or a "
                f"postgresql:// URL, got {target!r}"
            )
        self.target: str = target
        """What the store is opened from."""
        self.database: str = options.get("DATABASE", "default")
        """The Django database alias whose transactions an enqueue follows."""
        self.enqueue_on_commit: bool = bool(options.get("ENQUEUE_ON_COMMIT", True))
        """Whether an enqueue inside an atomic block waits for its commit."""
        max_attempts = options.get("MAX_ATTEMPTS", 1)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(
                f"TASKS[{alias!r}]: OPTIONS['MAX_ATTEMPTS'] must be an int of at least 1, "
                f"got {max_attempts!r}"
            )
        self.max_attempts: int = max_attempts
        """How many times each job may be claimed."""

    @property
    def store(self) -> jobtable.Store:
        """The store the backend's jobs live in, shared by every backend of its target."""
        return shared_store(self.target)

    def _job(self, task: AnyTask, args: Any, kwargs: Any) -> _Job:
        """Checks the call and returns its job: a new id, its payload and its options."""
        self.validate_task(task)
        run_after = task.run_after
        if run_after is not None and timezone.is_naive(run_after):
            run_after = timezone.make_aware(run_after)
        try:
            call = TaskCall(
                task=task.module_path,
                args=normalize_json(list(args)),
                kwargs=normalize_json(kwargs),
                backend=self.alias,
                run_after=None if run_after is None else run_after.isoformat(),
            )
        except pydantic.ValidationError as err:
            raise jobtable.PayloadError(
                f"enqueue {task.module_path!r}: its arguments do not round-trip through JSON: {err}"
            ) from err
        store = self.store
        options: EnqueueOptions = {
            "priority": -task.priority,
            "queue": task.queue_name,
            "max_attempts": self.max_attempts,
            "run_at": run_after,
        }
        return _Job(new_id(), call, options, Binding(store, store.max_payload_bytes))

    def _read(self, job_id: str) -> AnyResult:
        try:
            record = self.store.inspect(job_id)
        except jobtable.JobNotFound:
            raise TaskResultDoesNotExist(job_id) from None
        return result_of(record, self.alias)

    async def _aread(self, job_id: str) -> AnyResult:
        try:
            record = await self.store.ainspect(job_id)
        except jobtable.JobNotFound:
            raise TaskResultDoesNotExist(job_id) from None
        return result_of(record, self.alias)

    def _stored(
        self, task: Task[_P, _R], job: _Job, moment: datetime.datetime, args: Any, kwargs: Any
    ) -> TaskResult[_P, _R]:
        """The result of a job whose write committed, as get_result reads it until a worker runs it.

        Not read back: a worker in this process may claim the job at once.
        """
        # As stored: the text of the store's clock, read back.
        stored = datetime.datetime.fromisoformat(timestamp(moment))
        result = new_result(task, job.id, args, kwargs, self.alias, stored)
        task_enqueued.send(type(self), task_result=result)
        return result

    def enqueue(
        self, task: Task[_P, _R], args: list[Any], kwargs: dict[str, Any]
    ) -> TaskResult[_P, _R]:
        """Stores a job that runs task(*args, **kwargs) and returns its TaskResult.

        Inside ``transaction.atomic()`` on the backend's DATABASE, with
        ENQUEUE_ON_COMMIT, the job is stored when the outermost block commits (and
        never when it rolls back): the result returned is READY with
        ``enqueued_at`` None, and ``refresh()`` raises TaskResultDoesNotExist until
        the commit.

        Args:
            task: The Django task.
            args: Its positional arguments, which JSON must hold as they are.
            kwargs: Its keyword arguments, which JSON must hold as they are.

        Returns:
            The task's result, READY until a worker runs it.

        Raises:
            InvalidTask: The backend cannot run task.
            TypeError: Arguments JSON cannot hold; nothing is stored.
            jobtable.PayloadError: Arguments that do not round-trip through JSON;
                nothing is stored.
        """
        job = self._job(task, args, kwargs)
        connection = connections[self.database]
        if self.enqueue_on_commit and connection.in_atomic_block:
            transaction.on_commit(lambda: self._write(task, job, args, kwargs), using=self.database)
            return new_result(task, job.id, args, kwargs, self.alias, None)
        return self._write(task, job, args, kwargs)

    def _write(self, task: Task[_P, _R], job: _Job, args: Any, kwargs: Any) -> TaskResult[_P, _R]:
        moment = job.binding.store.clock()
        # The same path as every enqueue: its span, its traceparent, its wake-up.
        named = Named([job.id], moment)
        TASK_KIND._enqueue_many("enqueue", job.binding, [job.call], job.options.copy(), named)
        return self._stored(task, job, moment, args, kwargs)

    async def aenqueue(
        self, task: Task[_P, _R], args: list[Any], kwargs: dict[str, Any]
    ) -> TaskResult[_P, _R]:
        """The async form of enqueue; it stores the job at once (async code has no atomic())."""
        job = self._job(task, args, kwargs)
        moment = job.binding.store.clock()
        named = Named([job.id], moment)
        await TASK_KIND._aenqueue_many(
            "enqueue", job.binding, [job.call], job.options.copy(), named
        )
        return self._stored(task, job, moment, args, kwargs)

    def get_result(self, result_id: str) -> AnyResult:
        """Returns the TaskResult of the job with id result_id, as stored now.

        Args:
            result_id: The id of the task's job, as its TaskResult holds it.

        Returns:
            The task's result.

        Raises:
            TaskResultDoesNotExist: No job has the id, the job is not a Django
                task's, or its task can no longer be imported.
        """
        return self._read(result_id)

    async def aget_result(self, result_id: str) -> AnyResult:
        """The async form of get_result."""
        return await self._aread(result_id)
