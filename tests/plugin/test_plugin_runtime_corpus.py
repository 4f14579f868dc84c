"""Every method of every golden package, and of jobtable's own db package, on a real database.

Each package's schema runs in a database of its own (an SQLite file, a
fresh PostgreSQL database, a database on a throwaway MariaDB server); then
each method of each Querier and AsyncQuerier is called with sample
arguments, a few rounds, and every value returned is checked against the
method's return annotation (runtime_corpus). A value that is not of its
annotated type fails the test; a call the database refuses does not. Run
with -s to see the figures of each package.
"""

import contextlib
import importlib
import pathlib
import re
import secrets
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Iterator

import asyncmy
import asyncmy.errors
import asyncpg
import psycopg
import pymysql
import pytest
from mysql_values import connect as mysql_connect
from plugin_harness import CASES
from runtime_corpus import Tally, call_async, call_sync, query_modules

# Every test starts the calls of a whole package; the MariaDB one a server.
pytestmark = pytest.mark.slow

SQLITE = [
    "sqlite_dataclass",
    "sqlite_features",
    "sqlite_lint",
    "sqlite_multibyte",
    "sqlite_untyped",
]
PSYCOPG = ["postgres_async", "postgres_features", "postgres_multibyte", "postgres_pydantic"]
PSYCOPG += ["postgres_untyped"]
ASYNCPG = ["postgres_asyncpg", "postgres_asyncpg_pydantic"]


def _schema(package: str, case: str = "") -> str:
    """The package's SCHEMA, or the schema file its case's sqlc.yaml names."""
    try:
        return str(importlib.import_module(f"{package}.schema").SCHEMA)
    except ModuleNotFoundError:
        config = (CASES / case / "sqlc.yaml").read_text()
        match = re.search(r"^\s*schema:\s*(\S+)", config, re.MULTILINE)
        assert match is not None, case
        return (CASES / case / match.group(1)).read_text()


def _report(tally: Tally, name: str) -> None:
    print("\n" + tally.summary(name))
    assert tally.succeeded, f"{name}: no call succeeded: {tally.failed}"
    assert not tally.mismatches, "\n".join(tally.mismatches[:20])


def _sqlite(package: str, path: pathlib.Path, skip: tuple[str, ...] = ()) -> Tally:
    tally = Tally()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executescript(_schema(package))
        for module in query_modules(package, skip):
            call_sync(module.Querier(conn), tally, (sqlite3.Error,), f"{module.__name__}.")
    finally:
        conn.close()
    return tally


@pytest.mark.parametrize("case", SQLITE)
def test_sqlite_case_returns_what_it_annotates(case: str, tmp_path: pathlib.Path) -> None:
    _report(_sqlite(case, tmp_path / "case.db"), f"sqlite3 {case}")


def test_jobtables_sqlite_module_returns_what_it_annotates(tmp_path: pathlib.Path) -> None:
    tally = _sqlite("jobtable.db.sqlite", tmp_path / "jobtable.db")
    _report(tally, "sqlite3 jobtable.db.sqlite")


@contextlib.contextmanager
def _pg_database(server: str, schema: str) -> Iterator[str]:
    """A fresh database on the test server holding schema; its URL, dropped after."""
    name = f"plugin_corpus_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        try:
            url = urllib.parse.urlsplit(server)._replace(path=f"/{name}").geturl()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(schema.encode())
            yield url
        finally:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _psycopg(package: str, url: str, skip: tuple[str, ...] = ()) -> Tally:
    tally = Tally()
    errors = (psycopg.Error,)
    for module in query_modules(package, skip):
        with psycopg.connect(url, autocommit=True) as conn:
            call_sync(module.Querier(conn), tally, errors, f"{module.__name__}.")
        if hasattr(module, "AsyncQuerier"):

            @contextlib.asynccontextmanager
            async def opened(module: object = module) -> AsyncIterator[object]:
                async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                    yield module.AsyncQuerier(conn)  # type: ignore[attr-defined]

            call_async(opened, tally, errors, f"{module.__name__} async.")
    return tally


@pytest.mark.postgres
@pytest.mark.parametrize("case", PSYCOPG)
def test_psycopg_case_returns_what_it_annotates(case: str, pg_server: str) -> None:
    with _pg_database(pg_server, _schema(case, case)) as url:
        _report(_psycopg(case, url), f"psycopg {case}")


@pytest.mark.postgres
def test_jobtables_postgres_module_returns_what_it_annotates(pg_server: str) -> None:
    package = "jobtable.db.postgres"
    with _pg_database(pg_server, _schema(package)) as url:
        _report(_psycopg(package, url, ("upgrade_",)), f"psycopg {package}")


@pytest.mark.postgres
@pytest.mark.parametrize("case", ASYNCPG)
def test_asyncpg_case_returns_what_it_annotates(case: str, pg_server: str) -> None:
    tally = Tally()
    errors = (asyncpg.PostgresError, asyncpg.InterfaceError)
    with _pg_database(pg_server, _schema(case, case)) as url:
        for module in query_modules(case):

            @contextlib.asynccontextmanager
            async def opened(module: object = module) -> AsyncIterator[object]:
                conn = await asyncpg.connect(url)
                try:
                    yield module.Querier(conn)  # type: ignore[attr-defined]
                finally:
                    await conn.close()

            call_async(opened, tally, errors, f"{module.__name__}.")
    _report(tally, f"asyncpg {case}")


def test_mysql_case_returns_what_it_annotates(mysql_url: str) -> None:
    case = "mysql_features"
    tally = Tally()
    name = f"plugin_corpus_{secrets.token_hex(6)}"
    with mysql_connect(mysql_url) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        try:
            with mysql_connect(mysql_url, name) as conn, conn.cursor() as setup:
                setup.execute(_schema(case))
                while setup.nextset():
                    pass
            _mysql_calls(case, mysql_url, name, tally)
        finally:
            cur.execute(f"DROP DATABASE {name}")
    _report(tally, f"pymysql and asyncmy {case}")


def _mysql_calls(case: str, url: str, database: str, tally: Tally) -> None:
    for module in query_modules(case):
        conn = mysql_connect(url, database)
        conn.autocommit(True)
        with conn:
            call_sync(module.Querier(conn), tally, (pymysql.err.Error,), f"{module.__name__}.")
        port = conn.port

        @contextlib.asynccontextmanager
        async def opened(module: object = module, port: int = port) -> AsyncIterator[object]:
            aconn = await asyncmy.connect(
                host="127.0.0.1", port=port, user="root", database=database, autocommit=True
            )
            try:
                yield module.AsyncQuerier(aconn)  # type: ignore[attr-defined]
            finally:
                aconn.close()

        call_async(opened, tally, (asyncmy.errors.Error,), f"{module.__name__} async.")
