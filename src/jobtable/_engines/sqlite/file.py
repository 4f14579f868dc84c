"""A SQLite file as jobtable opens it: the path checked, connected, its schema made current.

The schema is checked, created or upgraded in one transaction.
"""

import functools
import os
import re
import sqlite3
import stat
import time
from pathlib import Path

from jobtable._engines.sqlite.catalog import describe
from jobtable._engines.sqlite.text import Connection
from jobtable._engines.sqlite.upgrade_steps import UPGRADES as _UPGRADES
from jobtable._engines.tables import Table, tables_refusal
from jobtable._engines.tables import check_tables as tables_check
from jobtable._errors import StoreError

SCHEMA_VERSION = 17
"""The schema version this library writes, recorded in ``PRAGMA user_version``.

Bump it with every change to schema.sql, and add the step from the previous
version to ``_UPGRADES``.
"""


def _split_statements(script: str) -> list[str]:
    """Returns the statements of script, each with the comments above it."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending)
            pending = ""
    leftover = [
        ln for ln in pending.splitlines() if ln.strip() and not ln.lstrip().startswith("--")
    ]
    if leftover:
        raise ValueError(f"schema ends with an incomplete statement: {leftover[0]!r}")
    return statements


_DROP_NAME = re.compile(r"^\s*DROP\s+INDEX\s+IF\s+EXISTS\s+(\w+)", re.IGNORECASE | re.MULTILINE)
_CREATE_NAME = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIEW|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
    re.IGNORECASE | re.MULTILINE,
)


class SQLiteSchema:
    """schema.sql as statements, with the names it creates.

    A database that already has any of those names and no jobtable version
    was not made by jobtable, and is refused.
    """

    def __init__(self, script: str) -> None:
        self.statements = _split_statements(script)
        self.names = frozenset(
            name for statement in self.statements for name in self.creates(statement)
        )

    @staticmethod
    def creates(statement: str) -> frozenset[str]:
        """The names, lowercased, of what statement creates."""
        return frozenset(name.lower() for name in _CREATE_NAME.findall(statement))

    @staticmethod
    def drops(statement: str) -> frozenset[str]:
        """The names, lowercased, of the indexes statement drops if they exist."""
        return frozenset(name.lower() for name in _DROP_NAME.findall(statement))


def check_schema(schema: SQLiteSchema, conn: sqlite3.Connection, path: Path) -> int:
    """Returns the database's jobtable schema version; refuses one jobtable cannot use.

    Only reads, inside one read transaction (or the caller's): the version
    and the names it checks come from the same snapshot, so another
    process's schema, committed between two reads, is not mistaken for one
    jobtable did not create.
    """
    if conn.in_transaction:
        return _check_schema(schema, conn, path)
    conn.execute("BEGIN")
    try:
        return _check_schema(schema, conn, path)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _check_schema(schema: SQLiteSchema, conn: sqlite3.Connection, path: Path) -> int:
    try:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as err:
        if "not a database" in str(err):
            raise StoreError(f"cannot open {path}: the file is not a SQLite database") from err
        raise
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"cannot open {path}: its schema version {version} is newer than this "
            f"jobtable's ({SCHEMA_VERSION}); upgrade jobtable"
        )
    # Each step's version leads to the latest, step by step (a step may skip
    # versions: 12 leads to 16, 13 to 15 being other changes' steps).
    if version < 0 or (0 < version < SCHEMA_VERSION and version not in _UPGRADES):
        raise StoreError(
            f"cannot open {path}: its schema version {version} (PRAGMA user_version) is not "
            "one jobtable ever wrote; the file is left as it is"
        )
    if version == 0:
        rows = conn.execute("SELECT type, name FROM sqlite_schema").fetchall()
        for kind, name in rows:
            if str(name).lower() in schema.names:
                raise StoreError(
                    f"cannot open {path}: it already has a {kind} named {name} "
                    "that jobtable did not create"
                )
    return version


def _describe(conn: sqlite3.Connection, table: str) -> Table:
    return describe(conn, table)


@functools.cache
def _reference_tables(schema: SQLiteSchema) -> dict[str, Table]:
    """The tables of schema as a new database gets them, created once in memory."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in schema.statements:
            conn.execute(statement)
        names = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        ]
        return {name: _describe(conn, name) for name in names}
    finally:
        conn.close()


def check_tables(schema: SQLiteSchema, conn: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuses a database whose tables differ from schema's, naming each difference.

    version is the schema version the database had when opened: the
    current one at open, an older one right after its upgrade. One catalog
    read per table of schema.
    """
    tables_check(
        _reference_tables(schema),
        lambda table: _describe(conn, table),
        tables_refusal(str(path), version, SCHEMA_VERSION),
    )


def migrate(schema: SQLiteSchema, conn: sqlite3.Connection, path: Path) -> None:
    """Brings the schema to SCHEMA_VERSION in one transaction: all of it or none.

    A database whose tables, once upgraded (or found current), differ from
    schema's is refused, and the upgrade rolled back.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Checked again under the write lock: another process may have
        # created or upgraded the schema since the first look.
        version = check_schema(schema, conn, path)
        if version == 0:
            for statement in schema.statements:
                conn.execute(statement)
        else:
            reached = version
            while reached < SCHEMA_VERSION:
                reached = _UPGRADES[reached](schema, conn)
            check_tables(schema, conn, path, version)
        if version != SCHEMA_VERSION:
            # A PRAGMA takes no parameters; the value is our own integer.
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def enter_wal(conn: sqlite3.Connection, path: Path, busy_timeout: float) -> None:
    """Puts the database in WAL mode, waiting up to busy_timeout seconds for the lock.

    SQLite answers a journal-mode change that meets another connection's
    lock with "database is locked" at once, without its busy handler, so
    processes opening a new file together wait here instead.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            break
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    if str(mode).lower() != "wal":
        raise StoreError(f"cannot open {path}: WAL mode is unavailable (journal mode {mode})")


def connect(path: Path, *, create: bool, busy_timeout: float) -> Connection:
    """Connects to the database at path, creating the file only with create.

    The connection reads any stored text and can finish its statements
    (``jobtable._engines.sqlite.text.Connection``).
    """
    # A file: URI with mode=rw never creates a file, so opening an existing
    # database cannot leave a new empty one behind if it vanished meanwhile.
    mode = "rwc" if create else "rw"
    conn = sqlite3.connect(
        f"{path.as_uri()}?mode={mode}",
        uri=True,
        timeout=busy_timeout,
        isolation_level=None,
        check_same_thread=False,
        factory=Connection,
    )
    assert isinstance(conn, Connection)
    return conn


def check_file(path: Path) -> bool:
    """Refuses a path that cannot hold a database; returns whether the file has content.

    Only asks the file system: it never opens the file. Closing any
    descriptor of a file drops every POSIX lock this process holds on it,
    those of SQLite's open connections included, so reading the header here
    would break the locking of another store on the same file.
    """
    if path.is_dir():
        raise StoreError(f"cannot open {path}: it is a directory")
    if not path.parent.is_dir():
        raise StoreError(f"cannot open {path}: the folder {path.parent} does not exist")
    if _read_only(path.parent):
        raise StoreError(
            f"cannot open {path}: the folder {path.parent} is read-only, and SQLite's "
            "write-ahead log needs files beside the database"
        )
    try:
        info = path.stat()
    except FileNotFoundError:
        return False
    except OSError as err:
        raise StoreError(f"cannot open {path}: {err.strerror or err}") from err
    if _read_only(path, info.st_mode):
        raise StoreError(f"cannot open {path}: the file is read-only")
    return info.st_size > 0


def _read_only(path: Path, mode: int | None = None) -> bool:
    """Tells whether path is meant to be read-only: no write permission bit, or none for us.

    The bits count even for root, whom the operating system lets write
    anyway: a database its owner made read-only is not written by jobtable.
    """
    if mode is None:
        mode = path.stat().st_mode
    return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK)
