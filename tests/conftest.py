"""Fixtures shared by every test module.

``pg_url`` gives a test a PostgreSQL schema of its own. The server is
``JOBTABLE_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
When it cannot be reached the test is skipped, saying how to enable it; on CI
(``CI`` set) it fails instead, so a missing server never passes as green.
"""

import os
import secrets
from collections.abc import Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from jobtable._store import redact_url

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_server_url() -> str:
    """The URL of the test server, from JOBTABLE_TEST_POSTGRES_URL or the default."""
    return os.environ.get("JOBTABLE_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL


def with_search_path(url: str, schema: str) -> str:
    """Returns url with its connections' search_path set to schema alone."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks every test that uses a PostgreSQL server, so ``-m "not postgres"`` leaves it out."""
    for item in items:
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


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

    Every schema it made is dropped, with everything in it, after the test.
    """
    import psycopg
    from psycopg import sql

    schemas: list[str] = []

    def make() -> str:
        schema = f"jobtable_test_{secrets.token_hex(6)}"
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        schemas.append(schema)
        return with_search_path(pg_server, schema)

    yield make
    with psycopg.connect(pg_server, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def pg_url(new_pg_url: Callable[[], str]) -> str:
    """A URL whose connections use a fresh, empty schema, dropped after the test."""
    return new_pg_url()
