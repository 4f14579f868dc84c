"""The conformance suite's fixtures: each case runs once per engine, on a database of its own."""

import pathlib
from collections.abc import Iterator

import pytest
from engine_params import ENGINES
from pgbouncer_server import PooledURLs

from conformance.engine_kits import Kit, postgres_kit, sqlite_kit
from jobtable._engines.base import Engine


@pytest.fixture(
    params=[
        *ENGINES,
        pytest.param("postgres-pgbouncer", marks=[pytest.mark.postgres, pytest.mark.slow]),
        pytest.param("postgres-pgbouncer-session", marks=[pytest.mark.postgres, pytest.mark.slow]),
    ]
)
def engine(request: pytest.FixtureRequest) -> str:
    """The engine under test; postgres-pgbouncer: PostgreSQL through PgBouncer, transaction mode.

    postgres-pgbouncer-session: through PgBouncer in session mode, pooled, listening directly.
    """
    name: str = request.param
    return name


@pytest.fixture
def kit(engine: str, store_target: str, request: pytest.FixtureRequest) -> Kit:
    """The engine under test, on a fresh database of the test's own."""
    if engine == "sqlite":
        return sqlite_kit(pathlib.Path(store_target))
    if engine.startswith("postgres-pgbouncer"):
        name = "pooled_pg_session" if engine.endswith("-session") else "pooled_pg"
        urls: PooledURLs = request.getfixturevalue(name)
        return postgres_kit(store_target, pooled=urls.pooled)
    return postgres_kit(store_target)


@pytest.fixture
def opened(kit: Kit) -> Iterator[Engine]:
    """The engine under test, open on its fresh database; closed after the test."""
    engine = kit.open()
    yield engine
    engine.close()
