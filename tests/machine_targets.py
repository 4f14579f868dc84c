"""Fresh databases for the Hypothesis state machines: one per example, on either engine."""

import dataclasses
import pathlib
import secrets
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

M = TypeVar("M", bound=Any)
"""A state machine class with a make_target attribute."""


@dataclasses.dataclass
class Target:
    """A fresh database for one example: its Store.open target, all it stores, and its drop."""

    open_target: str
    stored: Callable[[], bytes]
    drop: Callable[[], None]


def sqlite_target() -> Target:
    """A new SQLite file in a temporary folder; stored() is every byte of it and its WAL."""
    folder = tempfile.TemporaryDirectory(prefix="jobtable-machine-")
    path = pathlib.Path(folder.name) / "jobs.db"

    def stored() -> bytes:
        return b"\n".join(p.read_bytes() for p in sorted(path.parent.glob("jobs.db*")))

    return Target(str(path), stored, folder.cleanup)


def postgres_target(server: str) -> Target:
    """A new schema on the PostgreSQL server; stored() is every row of its tables as text."""
    import psycopg
    from psycopg import sql

    schema = f"jobtable_machine_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    separator = "&" if "?" in server else "?"
    url = f"{server}{separator}options=-csearch_path%3D{schema}"

    reader = psycopg.connect(url, autocommit=True)

    def stored() -> bytes:
        rows = reader.execute(
            "SELECT jobs::text FROM jobs UNION ALL SELECT runners::text FROM runners"
        ).fetchall()
        return "\n".join(str(row[0]) for row in rows).encode()

    def drop() -> None:
        reader.close()
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))

    return Target(url, stored, drop)


def on_engine(machine: type[M], engine: str, request: pytest.FixtureRequest) -> type[M]:
    """machine as it runs on engine: a subclass whose examples each get a PostgreSQL schema."""
    if engine == "sqlite":
        return machine
    server: str = request.getfixturevalue("pg_server")
    target = staticmethod(lambda: postgres_target(server))
    return type(f"{machine.__name__}OnPostgres", (machine,), {"make_target": target})
