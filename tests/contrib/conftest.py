"""Sets Django up for the Django backend's tests; without Django (3.11) they are not collected.

Django 6 needs Python 3.12 or newer, and the main virtual environment may be
3.11: ``make test-django`` runs these tests in ``.venv-django``.
"""

import asyncio
import os
import pathlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

try:
    import django

    HAVE_DJANGO = True
except ModuleNotFoundError:
    HAVE_DJANGO = False

collect_ignore_glob: list[str] = [] if HAVE_DJANGO else ["test_django_*.py"]

if HAVE_DJANGO:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "djsettings")
    django.setup()

    from django.tasks import task_backends
    from django.test import override_settings

    import jobtable
    from jobtable.contrib.django import JobtableBackend, build_runner, close_stores

    class Worker:
        """A real runner of a backend's tasks on a thread of its own, as jobtable_worker has."""

        def __init__(self, backend: JobtableBackend, queues: dict[str, int]) -> None:
            self.runner = build_runner(backend, queues=queues, poll_interval=0.05)
            self._started = threading.Event()
            self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

        async def _main(self) -> None:
            await self.runner.start()
            self._started.set()
            await self.runner.wait()

        def start(self) -> None:
            self._thread.start()
            assert self._started.wait(30), "the worker did not start"

        def stop(self) -> None:
            self.runner.stop()
            self._thread.join(60)
            assert not self._thread.is_alive(), "the worker did not stop"

        def __enter__(self) -> "Worker":
            self.start()
            return self

        def __exit__(self, *exc_info: object) -> None:
            self.stop()

    @pytest.fixture(name="Worker")
    def worker_class() -> type[Worker]:
        """The Worker class, as a fixture: ``with Worker(backend, queues): ...``."""
        return Worker

    @pytest.fixture
    def django_db(engine: str) -> str:
        """The Django database alias a test enqueues in: SQLite, or PostgreSQL with its store."""
        return "default" if engine == "sqlite" else "pg"

    @pytest.fixture
    def tasks_settings(store_target: str, django_db: str) -> Callable[..., dict[str, Any]]:
        """Makes the TASKS setting of a JobtableBackend on the test's store."""

        def make(**options: Any) -> dict[str, Any]:
            return {
                "default": {
                    "BACKEND": "jobtable.contrib.django.JobtableBackend",
                    "QUEUES": ["default", "queue_1"],
                    "OPTIONS": {"STORE": store_target, "DATABASE": django_db, **options},
                },
                "other": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"},
            }

        return make

    @pytest.fixture
    def backend(tasks_settings: Callable[..., dict[str, Any]]) -> Iterator[JobtableBackend]:
        """The default backend, a JobtableBackend on the test's store; the store closed after."""
        with override_settings(TASKS=tasks_settings()):
            found = task_backends["default"]
            assert isinstance(found, JobtableBackend)
            yield found
        close_stores()

    @pytest.fixture
    def store(backend: JobtableBackend) -> jobtable.Store:
        """The backend's store."""
        return backend.store

    @pytest.fixture
    def worker(backend: JobtableBackend) -> Iterator[Worker]:
        """A started worker of the default backend's queues, stopped after the test."""
        running = Worker(backend, {"default": 2, "queue_1": 1})
        running.start()
        yield running
        running.stop()

    @pytest.fixture
    def contrib_dir() -> pathlib.Path:
        """This folder: the tasks and settings modules the worker processes import."""
        return pathlib.Path(__file__).parent

    def wait_finished(result: Any, *, limit: float = 30.0) -> None:
        """Refreshes result until its task finished; fails the test after limit seconds."""
        deadline = time.monotonic() + limit
        while True:
            result.refresh()
            if result.is_finished:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"task {result.id} not finished after {limit} s: {result.status}")
            time.sleep(0.02)

    @pytest.fixture(name="wait_finished")
    def wait_finished_fixture() -> Callable[..., None]:
        """The wait_finished helper, as a fixture."""
        return wait_finished
