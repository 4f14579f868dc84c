"""``manage.py jobtable_worker``: a worker process for a JobtableBackend's tasks."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.tasks import task_backends
from django.tasks.exceptions import InvalidTaskBackend

from jobtable.contrib.django._backend import JobtableBackend
from jobtable.contrib.django._worker import build_runner


class Command(BaseCommand):
    """Runs the tasks of one backend until SIGINT or SIGTERM, then stops gracefully."""

    help = (
        "Runs the tasks of a jobtable.contrib.django.JobtableBackend until SIGINT or SIGTERM. "
        "A second signal cancels the tasks still running."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--backend", default="default", help="the TASKS alias to run (default: default)"
        )
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="NAME",
            help="a queue to run, repeatable (default: the backend's QUEUES)",
        )
        parser.add_argument(
            "--workers", type=int, default=4, help="tasks run at once per queue (default: 4)"
        )
        parser.add_argument(
            "--name", default=None, help="the runner's name (default: <host>-<pid>)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        alias: str = options["backend"]
        try:
            backend = task_backends[alias]
        except InvalidTaskBackend as err:
            raise CommandError(f"jobtable_worker: {err}") from err
        if not isinstance(backend, JobtableBackend):
            raise CommandError(
                f"jobtable_worker: TASKS[{alias!r}] is a {type(backend).__name__}, "
                "not a jobtable.contrib.django.JobtableBackend"
            )
        names: list[str] = options["queues"] or sorted(backend.queues)
        if not names:
            raise CommandError(
                f"jobtable_worker: TASKS[{alias!r}] allows any queue (QUEUES is empty): "
                "name the ones to run with --queue"
            )
        unknown = [name for name in names if backend.queues and name not in backend.queues]
        if unknown:
            raise CommandError(
                f"jobtable_worker: queue {unknown[0]!r} is not in TASKS[{alias!r}]['QUEUES']"
            )
        workers: int = options["workers"]
        if workers < 1:
            raise CommandError(f"jobtable_worker: --workers must be at least 1, got {workers}")
        runner = build_runner(backend, queues=dict.fromkeys(names, workers), name=options["name"])
        self.stdout.write(f"jobtable_worker: running {alias!r} queues {names} on {backend.store!r}")
        self.stdout.flush()
        runner.run()
