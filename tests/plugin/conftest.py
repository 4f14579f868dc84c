"""Fixtures of the plugin's tests that reach the PostgreSQL server."""

import os

import psycopg
import pytest

SERVER_URL = (
    os.environ.get("JOBTABLE_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test"
)


@pytest.fixture(scope="module")
def server_url() -> str:
    """The server's URL; skips the test when it cannot be reached, except on CI."""
    try:
        with psycopg.connect(SERVER_URL, connect_timeout=5):
            return SERVER_URL
    except psycopg.Error as err:
        message = (
            f"PostgreSQL is not reachable ({err}); start it on 127.0.0.1:5432 "
            "(trust auth, database test) or set JOBTABLE_TEST_POSTGRES_URL"
        )
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so PostgreSQL tests may not be skipped: {message}")
    pytest.skip(message)
