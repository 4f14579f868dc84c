"""The server guard: a test that reaches the PostgreSQL test server must be marked postgres.
tests/server_guard.py refuses the connection in every run of the suite; here
it runs on a small file of its own in pytester, with the server's address a
closed port, so the proof itself needs no server and starts no process.
"""

import socket

import pytest

_UNMARKED_AND_MARKED = """
import psycopg
import pytest
from server_guard import postgres_server_url


def test_unmarked_reaches_the_server():
    psycopg.connect(postgres_server_url(), connect_timeout=2)


@pytest.mark.postgres
def test_marked_reaches_the_server():
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(postgres_server_url(), connect_timeout=2)


async def test_unmarked_reaches_it_async():
    await psycopg.AsyncConnection.connect(postgres_server_url(), connect_timeout=2)


async def test_unmarked_reaches_it_through_asyncpg():
    import asyncpg

    await asyncpg.connect(postgres_server_url(), timeout=2)


def test_unmarked_reaches_another_address():
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect("postgresql://postgres@127.0.0.1:1/test", connect_timeout=2)
"""


def test_a_test_reaching_the_server_without_the_postgres_marker_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's address is a closed port, so the proof needs no server:
    # the guard refuses by address, before any connection is tried.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("JOBTABLE_TEST_POSTGRES_URL", f"postgresql://postgres@127.0.0.1:{port}/test")
    pytester.makepyfile(_UNMARKED_AND_MARKED)

    result = pytester.runpytest_inprocess(
        "-p",
        "server_guard",
        "-o",
        "asyncio_mode=auto",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-q",
    )

    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(["*test_unmarked_reaches_the_server*not marked postgres*"])
    result.stdout.fnmatch_lines(["*test_unmarked_reaches_it_async*not marked postgres*"])
    result.stdout.fnmatch_lines(["*test_unmarked_reaches_it_through_asyncpg*not marked postgres*"])
