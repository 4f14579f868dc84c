"""jobtable's pytest plugin: a fresh store per test, on SQLite or on PostgreSQL.

pytest loads it wherever jobtable is installed (entry point ``pytest11``).
Its fixtures:

- ``jobtable_target``: what ``Store.open`` takes for a fresh, empty store:
  a SQLite file in the test's ``tmp_path``; or, when a PostgreSQL URL is
  given, that server with a schema of the test's own, dropped after it.
- ``jobtable_store``: the store opened there, closed after the test. When the
  test also asks for ``jobtable_clock``, the store reads its time from it.
- ``jobtable_clock``: a ``FrozenClock`` started at the real time.

The URL comes from ``--jobtable-url``, else the ``JOBTABLE_TEST_URL``
environment variable, else the ``jobtable_url`` ini option; without one,
the store is SQLite.
"""

import contextlib
import os
import pathlib
import secrets
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from jobtable._errors import StoreError
from jobtable._store import Store
from jobtable._values import redact_url
from jobtable.testing._clock import FrozenClock

ENVIRONMENT = "JOBTABLE_TEST_URL"
"""The environment variable that gives the fixtures a PostgreSQL server."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Adds --jobtable-url and the jobtable_url ini option."""
    text = "PostgreSQL URL: each jobtable_store gets a fresh schema there (default: SQLite)"
    parser.addoption("--jobtable-url", default=None, help=text)
    parser.addini("jobtable_url", help=text, default="")


def with_search_path(url: str, schema: str) -> str:
    """Returns url with its connections' search_path set to schema alone."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query)))


@contextlib.contextmanager
def postgres_schema(url: str) -> Iterator[str]:
    """Makes a fresh schema on the server at url; yields a URL whose connections use it.

    The schema, named ``jobtable_test_`` and 12 random hex digits, is
    dropped with everything in it on exit. Needs psycopg (jobtable[postgres]).
    Raises StoreError, naming the URL (its password hidden) and where it came
    from, for a URL that is not PostgreSQL's or a server it cannot reach.
    """
    try:
        import psycopg
        from psycopg import sql
    except ModuleNotFoundError as err:
        raise RuntimeError(
            f"a PostgreSQL store for tests needs psycopg ({err}); install jobtable[postgres]"
        ) from err

    if not url.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            f"jobtable's pytest plugin: the URL of --jobtable-url, {ENVIRONMENT} or jobtable_url "
            f"is not a postgresql:// URL (it starts {url.partition(':')[0]!r}); "
            "leave it unset for SQLite"
        )
    schema = f"jobtable_test_{secrets.token_hex(6)}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    except psycopg.Error as err:
        raise StoreError(
            f"jobtable's pytest plugin: cannot make a test schema on {redact_url(url)} "
            f"(--jobtable-url, {ENVIRONMENT} or jobtable_url): {redact_url(str(err))}"
        ) from err
    try:
        yield with_search_path(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def configured_url(config: pytest.Config) -> str | None:
    """The PostgreSQL URL the fixtures use: the option, the environment, the ini; or None."""
    given = config.getoption("--jobtable-url") or os.environ.get(ENVIRONMENT)
    ini = config.getini("jobtable_url")
    url = given or (ini if isinstance(ini, str) else None)
    return url or None


@pytest.fixture
def jobtable_clock() -> FrozenClock:
    """A FrozenClock started at the real time; jobtable_store reads it when both are asked."""
    return FrozenClock()


@pytest.fixture
def jobtable_target(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    """What Store.open takes for a fresh store: a SQLite file, or a fresh PostgreSQL schema."""
    url = configured_url(request.config)
    if url is None:
        yield os.fspath(tmp_path / "jobs.db")
        return
    with postgres_schema(url) as schema_url:
        yield schema_url


@pytest.fixture
def jobtable_store(request: pytest.FixtureRequest, jobtable_target: str) -> Iterator[Store]:
    """A fresh store at jobtable_target, closed after the test.

    Its clock is jobtable_clock when the test asks for that fixture too,
    else the real one.
    """
    clock: FrozenClock | None = None
    if "jobtable_clock" in request.fixturenames:
        clock = request.getfixturevalue("jobtable_clock")
    with Store.open(jobtable_target, clock=clock) as store:
        yield store
