"""A pytest plugin keeping the ``postgres`` marker true: no unmarked test may reach the server.

``make test-fast`` runs ``-m "not postgres"`` as the tests that need no
PostgreSQL, which holds only if every test that reaches the test server
carries the marker. The marker is added at collection from the fixtures a
test names and its engine parameter; a test that asks for the server some
other way (``request.getfixturevalue``, a fixture parameter not named
``engine``) escapes it. So while a test runs (its fixtures included), a
psycopg or asyncpg connection to the test server
(``JOBTABLE_TEST_POSTGRES_URL``, or the default) fails the test unless it
is marked ``postgres``, whether the server is up or not. Connections to
other addresses (a closed port, a silent socket, a throwaway cluster) are
left alone: tests of connection errors need no server.

tests/conftest.py loads it; tests/test_server_guard.py loads it into a
pytester run to show it fails an unmarked test.
"""

import os
from collections.abc import Iterator
from typing import Any

import pytest

try:
    import psycopg
    import psycopg.conninfo
except ImportError:  # no psycopg: nothing can reach the server, so nothing to check
    psycopg = None  # type: ignore[assignment]

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"

_LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1"})

_running: list[pytest.Item] = []
_originals: list[tuple[object, str, object]] = []


def postgres_server_url() -> str:
    """The URL of the test server, from JOBTABLE_TEST_POSTGRES_URL or the default."""
    return os.environ.get("JOBTABLE_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL


def _address(conninfo: str, **kwargs: Any) -> tuple[str, str]:
    """The (host, port) a psycopg connect call aims at, local host names made one."""
    params = psycopg.conninfo.conninfo_to_dict(conninfo, **kwargs)
    host = str(params.get("host") or "")
    return ("local" if host in _LOCAL_HOSTS else host, str(params.get("port") or "5432"))


def _check(conninfo: str, **kwargs: Any) -> None:
    """Fails the running test if it is not marked postgres and conninfo is the test server."""
    if not _running or _running[-1].get_closest_marker("postgres") is not None:
        return
    if _address(conninfo, **kwargs) == _address(postgres_server_url()):
        raise AssertionError(
            f"{_running[-1].nodeid} connects to the PostgreSQL test server but is not marked "
            "postgres, so -m 'not postgres' would need the server: request pg_server or "
            "pg_url as an argument, parametrize by engine_params.ENGINES, or mark it"
        )


def _install() -> None:
    """Puts the check in front of every way psycopg (and asyncpg) opens a connection."""
    sync_connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]
    async_connect = psycopg.AsyncConnection.connect.__func__  # type: ignore[attr-defined]

    def checked_connect(cls: Any, /, conninfo: str = "", **kwargs: Any) -> Any:
        _check(conninfo, **kwargs)
        return sync_connect(cls, conninfo, **kwargs)

    async def checked_aconnect(cls: Any, /, conninfo: str = "", **kwargs: Any) -> Any:
        _check(conninfo, **kwargs)
        return await async_connect(cls, conninfo, **kwargs)

    replacements: list[tuple[object, str, object]] = [
        (psycopg.Connection, "connect", classmethod(checked_connect)),
        (psycopg.AsyncConnection, "connect", classmethod(checked_aconnect)),
    ]
    for owner, name, replacement in replacements:
        _originals.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, replacement)
    # psycopg.connect is Connection.connect bound at import: replace it too.
    _originals.append((psycopg, "connect", psycopg.connect))
    psycopg.connect = psycopg.Connection.connect
    try:
        import asyncpg  # the query generator's asyncpg target is tested on the server too
    except ImportError:
        return
    asyncpg_connect = asyncpg.connect

    async def checked_asyncpg_connect(dsn: str | None = None, **kwargs: Any) -> Any:
        address = {key: kwargs.get(key) for key in ("host", "port")}
        _check(dsn or "", **{key: value for key, value in address.items() if value is not None})
        return await asyncpg_connect(dsn, **kwargs)

    _originals.append((asyncpg, "connect", asyncpg_connect))
    asyncpg.connect = checked_asyncpg_connect


def running() -> pytest.Item | None:
    """The test that runs now (its fixtures included), or None between tests."""
    return _running[-1] if _running else None


def pytest_configure(config: pytest.Config) -> None:
    """Installs the check once, even when a pytester run loads the plugin again."""
    config.addinivalue_line("markers", "postgres: needs a PostgreSQL server")
    if psycopg is not None and not _originals:
        config.add_cleanup(_uninstall)
        _install()


def _uninstall() -> None:
    """Puts psycopg back as it was."""
    while _originals:
        owner, name, original = _originals.pop()
        setattr(owner, name, original)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Notes which test runs, fixtures included, for the check (and conftest's process check)."""
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()
