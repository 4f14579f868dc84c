"""Fixtures shared by every test module.

``pg_url`` gives a test a PostgreSQL schema of its own. The server is
``JOBTABLE_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
When it cannot be reached the test is skipped, saying how to enable it; on CI
(``CI`` set) it fails instead, so a missing server never passes as green.
"""

import asyncio
import contextlib
import os
import pathlib
import subprocess
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import mysql_server
import pg_cluster
import pgbouncer_server
import pytest
import server_guard
from engine_params import ENGINES
from server_guard import postgres_server_url

import jobtable
from jobtable._values import redact_url
from jobtable.testing.pytest_plugin import postgres_schema

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    """Loads server_guard, which fails a test that reaches PostgreSQL without the postgres marker.

    The marking below misses a test that asks for the server indirectly.
    Registered here rather than in pytest_plugins, since conftest imports it.
    """
    config.pluginmanager.register(server_guard, "server_guard")


POSTGRES_FIXTURES = frozenset({"pg_server", "throwaway_pg"})
"""Fixtures that need PostgreSQL: the shared test server, or its binaries for a cluster."""


def needs_postgres(item: pytest.Item) -> bool:
    """Whether item uses PostgreSQL: by a fixture it requests, or by its engine parameter.

    Fixtures reached only through ``request.getfixturevalue`` (``store_target``
    asks for ``pg_url`` that way) are not in ``fixturenames`` at collection
    time, so the engine parameter is looked at too.
    """
    if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("engine") == "postgres"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks every test that uses PostgreSQL, so ``-m "not postgres"`` leaves it out.

    It runs first, before ``-m`` deselects by the markers it added.
    """
    for item in items:
        if needs_postgres(item):
            item.add_marker(pytest.mark.postgres)


# A test that starts a process must carry the ``slow`` marker: ``make
# test-fast`` runs ``-m "not postgres and not slow"`` as the tests that need
# no process, and this keeps the marker true. While a test runs (fixtures of
# any scope included), a process it starts without the marker fails it.


class _CheckedPopen(subprocess.Popen[Any]):
    """subprocess.Popen, refused to a running test that is not marked slow."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        test = server_guard.running()
        if test is not None and test.get_closest_marker("slow") is None:
            raise AssertionError(f"{test.nodeid} starts a process: mark it slow")
        super().__init__(*args, **kwargs)


subprocess.Popen = _CheckedPopen  # type: ignore[misc]


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The test server's URL, once it answered; skips (fails on CI) when it does not."""
    url = postgres_server_url()
    try:
        import psycopg
    except ImportError as err:
        message = f"PostgreSQL tests need psycopg ({err}); install jobtable[postgres,dev]"
    else:
        try:
            with psycopg.connect(url, connect_timeout=5):
                return url
        except psycopg.Error as err:
            message = (
                f"PostgreSQL is not reachable at {redact_url(url)} ({err}); start it on "
                "127.0.0.1:5432 (trust auth, database test) or set JOBTABLE_TEST_POSTGRES_URL"
            )
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so PostgreSQL tests may not be skipped: {message}")
    pytest.skip(message)


@pytest.fixture
def new_pg_url(pg_server: str) -> Iterator[Callable[[], str]]:
    """Makes URLs whose connections each use a fresh, empty schema.

    Every schema it made is dropped, with everything in it, after the test
    (jobtable's pytest plugin makes them, as it does for ``jobtable_store``).
    """
    with contextlib.ExitStack() as schemas:

        def make() -> str:
            return schemas.enter_context(postgres_schema(pg_server))

        yield make


@pytest.fixture
def pg_url(new_pg_url: Callable[[], str]) -> str:
    """A URL whose connections use a fresh, empty schema, dropped after the test."""
    return new_pg_url()


def _skip_unless_possible(what: str, reason: str | None) -> None:
    """Skips the test (fails it on CI) when reason says why what cannot be made here."""
    if reason is not None:
        message = f"cannot make {what}: {reason}"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so this test may not be skipped: {message}")
        pytest.skip(message)


@pytest.fixture
def throwaway_pg(request: pytest.FixtureRequest) -> Iterator[pg_cluster.Cluster]:
    """A PostgreSQL cluster of the test's own, started; stopped and removed after the test.

    For tests that stop or restart a server, or fill its connection slots:
    the shared one is never stopped. Its max_connections is 50, or the
    int a test parametrizes this fixture with (indirect). Skips (fails on
    CI) when this machine cannot run one.
    """
    _skip_unless_possible("a throwaway PostgreSQL cluster", pg_cluster.cannot_run())
    max_connections: int = getattr(request, "param", 50)
    with pg_cluster.throwaway_cluster(max_connections) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def pgbouncer(pg_server: str) -> Iterator[pgbouncer_server.Bouncer]:
    """A throwaway PgBouncer in transaction mode in front of the test server, for the session.

    Skips (fails on CI) when PgBouncer is not installed.
    """
    _skip_unless_possible("a throwaway PgBouncer", pgbouncer_server.cannot_run())
    with pgbouncer_server.throwaway_bouncer(pg_server) as bouncer:
        yield bouncer


@pytest.fixture
def pooled_pg(
    pgbouncer: pgbouncer_server.Bouncer, pg_url: str, request: pytest.FixtureRequest
) -> Iterator[pgbouncer_server.PooledURLs]:
    """The URLs of a fresh schema through the session's PgBouncer and direct (``pg_url``).

    PgBouncer pools it in transaction mode, with one server connection, on
    which another client left prepared statements; or in session mode when
    the test parametrizes this fixture (indirect) with "session".
    """
    mode: str = getattr(request, "param", "transaction")
    yield from _pooled(pgbouncer, pg_url, mode)


@pytest.fixture
def pooled_pg_session(
    pgbouncer: pgbouncer_server.Bouncer, pg_url: str
) -> Iterator[pgbouncer_server.PooledURLs]:
    """``pooled_pg`` in session mode, for a test that asks for it by name (getfixturevalue)."""
    yield from _pooled(pgbouncer, pg_url, "session")


def _pooled(
    pgbouncer: pgbouncer_server.Bouncer, pg_url: str, mode: str
) -> Iterator[pgbouncer_server.PooledURLs]:
    """pg_url's schema through pgbouncer in mode, another client's statements prepared on it."""
    schema = urllib.parse.parse_qs(urllib.parse.urlsplit(pg_url).query)["options"][0]
    schema = schema.removeprefix("-csearch_path=")
    pooled = pgbouncer.add_schema(schema, schema, mode)
    pgbouncer.prepare_as_another_client(schema)
    yield pgbouncer_server.PooledURLs(pooled=pooled, direct=pg_url)
    pgbouncer.remove_schema(schema)


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """The URL of a throwaway MariaDB server of the session's own (user root, no password).

    Started once for the session and removed after; the machine's own MySQL
    or MariaDB, if any, is never used. Skips (fails on CI) when MariaDB's
    binaries are missing. Only tests marked slow may take it: it starts a
    process.
    """
    _skip_unless_possible("a throwaway MariaDB server", mysql_server.cannot_run())
    with mysql_server.throwaway_server() as server:
        yield f"mysql://root@127.0.0.1:{server.port}/"


# Fixtures of the runner's tests: one real store per test, on every engine.
#
# The runner's suite is a conformance suite: each test that takes ``store``
# runs once per engine (a SQLite file, and a schema of its own on the
# PostgreSQL server).


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
    """Returns a check that every job of ids has succeeded or failed.

    A finished job never changes, so each call reads only the jobs not yet
    seen finished: the check's reads block the event loop, and reading all
    of ids on every poll would starve the very workers it waits for.
    """
    pending = list(reversed(ids))

    def check() -> bool:
        done = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED)
        while pending and runner.get(pending[-1]).status in done:
            pending.pop()
        return not pending

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
