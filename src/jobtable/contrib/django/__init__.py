"""A Django 6 tasks backend that stores tasks as jobtable jobs (``pip install jobtable[django]``).

In settings::

    INSTALLED_APPS = [..., "jobtable.contrib.django"]
    TASKS = {
        "default": {
            "BACKEND": "jobtable.contrib.django.JobtableBackend",
            "QUEUES": ["default", "emails"],
            "OPTIONS": {"STORE": "postgresql://app@db/app"},
        }
    }

``@task``-decorated functions then enqueue into the store, ``get_result``
reads their TaskResult back, and ``manage.py jobtable_worker`` runs them.
A task's exception never reaches its TaskResult: each of its ``errors`` is a
JobtableTaskError that names TaskFailed, holds jobtable's stored message
(``"internal error"``) and an empty traceback.
"""

from jobtable.contrib.django._backend import JobtableBackend, close_stores
from jobtable.contrib.django._payload import KIND_NAME, TASK_KIND, TaskCall
from jobtable.contrib.django._results import STATUSES, JobtableTaskError, TaskFailed
from jobtable.contrib.django._worker import TaskRaised, build_runner

__all__ = [
    "KIND_NAME",
    "STATUSES",
    "TASK_KIND",
    "JobtableBackend",
    "JobtableTaskError",
    "TaskCall",
    "TaskFailed",
    "TaskRaised",
    "build_runner",
    "close_stores",
]
