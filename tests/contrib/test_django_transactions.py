"""An enqueue inside transaction.atomic() follows Django's enqueue-on-commit rules.

The backend's DATABASE is the Django database whose transactions it follows:
SQLite on the SQLite store, PostgreSQL on the PostgreSQL store. Inside
atomic(), the job is stored when the outermost block commits, never when it
(or the savepoint it was enqueued in) rolls back; with ENQUEUE_ON_COMMIT
False, or outside any block, at once.
"""

import contextlib
from collections.abc import Callable
from typing import Any

import djtasks
import pytest
from django.db import transaction
from django.tasks import TaskResultStatus, task_backends
from django.tasks.exceptions import TaskResultDoesNotExist
from django.test import override_settings

import jobtable
from jobtable.contrib.django import JobtableBackend, close_stores


class Rollback(Exception):
    """Raised to roll a block back."""


def enqueue_and_roll_back(using: str, *, store: jobtable.Store | None = None) -> Any:
    """Enqueues noop_task inside an atomic block that rolls back; returns its result.

    With store, checks inside the block that the job is stored already.
    """
    results = []
    with contextlib.suppress(Rollback), transaction.atomic(using=using):
        results.append(djtasks.noop_task.enqueue())
        if store is not None:
            assert store.get(results[0].id).status == jobtable.Status.QUEUED
        raise Rollback
    return results[0]


def test_an_enqueue_inside_atomic_is_stored_at_commit(
    backend: JobtableBackend, store: jobtable.Store, django_db: str
) -> None:
    with transaction.atomic(using=django_db):
        result = djtasks.noop_task.enqueue()
        assert result.status == TaskResultStatus.READY
        assert result.enqueued_at is None
        assert store.counts() == {}
        with pytest.raises(TaskResultDoesNotExist):
            result.refresh()
    assert store.get(result.id).status == jobtable.Status.QUEUED
    result.refresh()
    assert result.enqueued_at is not None
    assert result.task == djtasks.noop_task


@pytest.mark.usefixtures("backend")
def test_an_enqueue_inside_a_rolled_back_atomic_is_never_stored(
    store: jobtable.Store, django_db: str
) -> None:
    result = enqueue_and_roll_back(django_db)
    assert store.counts() == {}
    with pytest.raises(TaskResultDoesNotExist):
        result.refresh()


@pytest.mark.usefixtures("backend")
def test_an_enqueue_in_a_rolled_back_savepoint_is_dropped_and_the_others_kept(
    store: jobtable.Store, django_db: str
) -> None:
    with transaction.atomic(using=django_db):
        kept = djtasks.noop_task.enqueue()
        dropped = enqueue_and_roll_back(django_db)
        assert store.counts() == {}
    assert store.get(kept.id).status == jobtable.Status.QUEUED
    with pytest.raises(jobtable.JobNotFound):
        store.get(dropped.id)


def test_without_enqueue_on_commit_an_enqueue_inside_atomic_is_stored_at_once(
    tasks_settings: Callable[..., dict[str, Any]], django_db: str
) -> None:
    with override_settings(TASKS=tasks_settings(ENQUEUE_ON_COMMIT=False)):
        backend = task_backends["default"]
        assert isinstance(backend, JobtableBackend)
        result = enqueue_and_roll_back(django_db, store=backend.store)
        assert result.enqueued_at is not None
        assert backend.store.get(result.id).status == jobtable.Status.QUEUED
    close_stores()


@pytest.mark.usefixtures("backend")
def test_an_atomic_block_on_another_database_does_not_defer(store: jobtable.Store) -> None:
    with transaction.atomic(using="other"):
        result = djtasks.noop_task.enqueue()
        assert store.get(result.id).status == jobtable.Status.QUEUED


@pytest.mark.usefixtures("worker")
def test_a_task_enqueued_at_commit_runs(django_db: str, wait_finished: Callable[..., None]) -> None:
    with transaction.atomic(using=django_db):
        result = djtasks.calculate_meaning_of_life.enqueue()
    wait_finished(result)
    assert result.return_value == 42
