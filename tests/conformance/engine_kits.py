"""The engines the conformance suite runs on, and how each case names the seam methods it covers.

``Kit`` opens one engine on a test's fresh database and looks under it;
``covers`` marks a case with the seam methods it exercises, which
test_seam_coverage.py compares with every method of the seam.
"""

import dataclasses
import pathlib
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from jobtable._engines.base import Engine
from jobtable._values import timestamp

T = TypeVar("T")

LIMIT = 10.0
"""Seconds a test waits for background work before it fails; never a timing claim."""


@dataclasses.dataclass
class Kit:
    """One engine under test: how to open it on the test's database, and to look under it.

    ``stored`` returns everything the database holds, to compare before and
    after; ``version`` and ``set_version`` read and write the recorded schema
    version behind the engine's back; ``duplicate`` is the driver's error for
    a duplicate id and a pattern of its message.
    """

    name: str
    current_version: int
    open: Callable[[], Engine]
    open_wide: Callable[[int], Engine]
    version: Callable[[], int]
    set_version: Callable[[int], None]
    stored: Callable[[], object]
    duplicate: tuple[type[BaseException], str]


def sqlite_kit(path: pathlib.Path) -> Kit:
    from jobtable._engines.sqlite.engine import SQLiteEngine
    from jobtable._engines.sqlite.file import SCHEMA_VERSION

    def query(statement: str) -> int:
        conn = sqlite3.connect(path)
        try:
            value: int = conn.execute(statement).fetchone()[0]
            conn.commit()
        finally:
            conn.close()
        return value

    def set_version(version: int) -> None:
        conn = sqlite3.connect(path)
        try:
            conn.execute(f"PRAGMA user_version = {version:d}")
        finally:
            conn.close()

    def stored() -> object:
        return {
            str(file.relative_to(path.parent)): file.read_bytes()
            for file in sorted(path.parent.rglob("*"))
            if file.is_file()
        }

    return Kit(
        name="sqlite",
        current_version=SCHEMA_VERSION,
        open=lambda: SQLiteEngine.open(path),
        open_wide=lambda threads: SQLiteEngine.open(path, readers=threads),
        version=lambda: query("PRAGMA user_version"),
        set_version=set_version,
        stored=stored,
        duplicate=(sqlite3.IntegrityError, "UNIQUE constraint failed"),
    )


def postgres_kit(url: str, pooled: str | None = None) -> Kit:
    """The PostgreSQL engine on url; with pooled, opened through that pooler's URL for url.

    Through a pooler the engine listens on url (``listen_url``).
    """
    import psycopg

    from jobtable._engines.postgres.engine import PostgresEngine
    from jobtable._engines.postgres.schema import SCHEMA_VERSION

    def version() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute("SELECT version FROM jobtable_schema").fetchall()
        assert len(rows) == 1, f"the schema version is recorded once, not {rows}"
        value: int = rows[0][0]
        return value

    def set_version(version: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE jobtable_schema SET version = %s", (version,))

    def open_engine(max_connections: int = 10) -> PostgresEngine:
        if pooled is None:
            return PostgresEngine.open(url, max_connections=max_connections)
        return PostgresEngine.open(
            pooled, max_connections=max_connections, pooled=True, listen_url=url
        )

    def stored() -> object:
        with psycopg.connect(url, autocommit=True) as conn:
            return conn.execute(
                "SELECT 'schema', version::text FROM jobtable_schema"
                " UNION ALL SELECT 'job', jobs::text FROM jobs"
                " UNION ALL SELECT 'runner', runners::text FROM runners ORDER BY 1, 2"
            ).fetchall()

    return Kit(
        name="postgres",
        current_version=SCHEMA_VERSION,
        open=lambda: open_engine(),
        open_wide=lambda threads: open_engine(max_connections=threads),
        version=version,
        set_version=set_version,
        stored=stored,
        duplicate=(psycopg.errors.UniqueViolation, "duplicate key"),
    )


def in_threads(work: Callable[[T], None], each: list[T]) -> None:
    """Runs work(item) for every item of each, in a thread per item; returns when all ended."""
    threads = [threading.Thread(target=work, args=(item,)) for item in each]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT)


def covers(*methods: str) -> Callable[[T], T]:
    """Marks a conformance case as exercising methods of the seam (``Queries``, ``Engine``).

    The case must call each method it names; test_seam_coverage.py reads the
    marks from the source and fails for a seam method no case covers.
    """

    def mark(case: T) -> T:
        return case

    return mark


def at(seconds: float) -> str:
    """The time seconds from now (before it when negative), as the seam's UTC text."""
    return timestamp(datetime.now(UTC) + timedelta(seconds=seconds))


def moment(text: str) -> datetime:
    """The seam's UTC text as the aware datetime a row of the seam holds."""
    return datetime.fromisoformat(text)
