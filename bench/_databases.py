"""A database of the benchmark by engine name: a fresh one, or another process's."""

from pathlib import Path

import jobtable
from bench._db import PG_URL, Database
from bench._postgres_db import PostgresDatabase
from bench._sqlite_db import SQLiteDatabase


def create(engine: str, pg_url: str = PG_URL) -> Database:
    """A fresh database of engine; raises for an unreachable PostgreSQL server."""
    if engine == "sqlite":
        return SQLiteDatabase.create()
    return PostgresDatabase.create(pg_url)


def attach(engine: str, target: str) -> Database:
    """The database another process created at target; close leaves it in place."""
    store = jobtable.Store.open(target)
    if engine == "sqlite":
        return SQLiteDatabase(store, Path(target), None)
    return PostgresDatabase(store, target)
