"""Fixtures of the runner's tests: one real store per test, on every engine.

The runner's suite is a conformance suite: each test that takes ``store``
runs once per engine (a SQLite file, and a schema of its own on the
PostgreSQL server).
"""

import asyncio
import os
import pathlib
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable

ENGINES = ["sqlite", "postgres"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The name of the engine the test runs on."""
    name: str = request.param
    return name


@pytest.fixture
def store_target(engine: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> str:
    """What Store.open takes for a fresh store on the test's engine (for other processes)."""
    if engine == "sqlite":
        return os.fspath(tmp_path / "jobs.db")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    """A fresh store on the test's engine, closed after the test."""
    opened = jobtable.Store.open(store_target)
    yield opened
    opened.close()


async def wait_until(
    check: Callable[[], bool], *, limit: float = 20.0, interval: float = 0.01
) -> None:
    """Waits until check() is true; fails the test after limit seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not check():
        if loop.time() > deadline:
            pytest.fail(f"timed out after {limit} s waiting for {check}")
        await asyncio.sleep(interval)


def finished(runner: jobtable.Runner, ids: list[str]) -> Callable[[], bool]:
    """Returns a check that every job of ids has succeeded or failed."""

    def check() -> bool:
        return all(
            runner.get(i).status in (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED) for i in ids
        )

    return check


# Test modules cannot import this conftest by name reliably (pytest imports
# every conftest.py as the module "conftest", so the last one loaded wins):
# they take the helpers above as fixtures instead.


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., Awaitable[None]]:
    """The wait_until helper, as a fixture."""
    return wait_until


@pytest.fixture(name="finished")
def finished_fixture() -> Callable[[jobtable.Runner, list[str]], Callable[[], bool]]:
    """The finished helper, as a fixture."""
    return finished
