"""A SQLite file as jobtable opens it: the path checked, connected, its schema made current.

The schema is checked, created or upgraded in one transaction.
"""

import functools
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from jobtable._engines.sqlite.queries import (
    upgrade_to_v2,
    upgrade_to_v3,
    upgrade_to_v4,
    upgrade_to_v5,
    upgrade_to_v6,
    upgrade_to_v7,
    upgrade_to_v8,
)
from jobtable._engines.sqlite.text import Connection
from jobtable._engines.tables import Table, tables_refusal
from jobtable._engines.tables import check_tables as tables_check
from jobtable._errors import StoreError

SCHEMA_VERSION = 8
"""The schema version this library writes, recorded in ``PRAGMA user_version``.

Bump it with every change to schema.sql, and add the step from the previous
version to ``_UPGRADES``.
"""

# The indexes version 3 adds (unique keys and the listing's pages) or changes
# (jobs_finished's condition: schema.sql drops it, then creates it).
_INDEXES_V3 = frozenset(
    {
        "jobs_unique",
        "jobs_by_status",
        "jobs_by_status_kind",
        "jobs_by_status_queue",
        "jobs_finished",
    }
)


# The tables version 4 adds (flow control), and with its indexes all it creates.
_TABLES_V4 = frozenset({"queues", "queue_starts", "queue_starts_by_time"})
_CREATES_V4 = _TABLES_V4 | {"jobs_partition", "jobs_sequence"}
# What version 6 creates beside its columns: job_tags, its index, and the
# jobs table's triggers that fill it.
_CREATES_V6 = frozenset({"job_tags", "job_tags_seq", "jobs_tags_insert", "jobs_tags_delete"})
# What version 7 creates: job_steps and the jobs table's trigger that deletes
# a job's steps with it.
_CREATES_V7 = frozenset({"job_steps", "jobs_steps_delete"})
# The last version the step to version 2 reaches: it rebuilds the jobs table
# as the latest schema has it, with its triggers, creates the tables later
# versions add beside it (flow control's, version 4; job_tags, version 6;
# job_steps, version 7) and runs the runners table's step (version 5) itself.
_REBUILT_VERSION = 8
# What version 8 creates beside the rebuilt jobs table: workflows, job_deps
# and its index.
_TABLES_V8 = frozenset({"workflows", "job_deps", "job_deps_job"})


def _upgrade_to_v2(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 2 adds the job options and the cancelled status: the jobs table
    # is rebuilt from the latest schema's statements for it, which makes it
    # the latest version's jobs table at once; later versions that change
    # only other tables still take their steps.
    [table] = [st for st in schema.statements if schema.creates(st) == {"jobs"}]
    # The jobs table's indexes are named for it.
    indexes = [
        st
        for st in schema.statements
        if (names := schema.creates(st)) and all(n.startswith("jobs_") for n in names)
    ]
    # The tables later versions add beside jobs (flow control's, version 4;
    # job_tags, version 6; job_steps, version 7), created before the jobs
    # table's triggers.
    tables = [
        st
        for st in schema.statements
        if (n := schema.creates(st))
        and n <= _TABLES_V4 | _TABLES_V8 | {"job_tags", "job_tags_seq", "job_steps"}
    ]
    upgrade_to_v2(conn, table, [*tables, *indexes])
    upgrade_to_v5(conn)
    return _REBUILT_VERSION


def _upgrade_to_v3(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 3 adds nullable columns, in place, and indexes; it changes one,
    # which schema.sql drops before creating it.
    indexes = [
        st
        for st in schema.statements
        if (n := schema.creates(st) or schema.drops(st)) and n <= _INDEXES_V3
    ]
    upgrade_to_v3(conn, indexes)
    return 3


def _upgrade_to_v4(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 4 adds columns in place, then flow control's indexes and tables.
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V4]
    upgrade_to_v4(conn, creates)
    return 4


def _upgrade_to_v5(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 5 adds the runners table's host and process, in place.
    upgrade_to_v5(conn)
    return 5


def _upgrade_to_v6(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 6 adds the jobs table's tags and meta in place, then job_tags.
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V6]
    upgrade_to_v6(conn, creates)
    return 6


def _upgrade_to_v7(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 7 adds job_steps and the trigger that deletes a job's steps.
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V7]
    upgrade_to_v7(conn, creates)
    return 7


def _upgrade_to_v8(schema: "SQLiteSchema", conn: sqlite3.Connection) -> int:
    # Version 8 adds the pending status, which SQLite's CHECK cannot take in
    # place: the jobs table is rebuilt from the latest schema's statement,
    # with its indexes and triggers (renamed away with the old table and
    # dropped with it), beside workflows and job_deps.
    [table] = [st for st in schema.statements if schema.creates(st) == {"jobs"}]
    creates = [
        st
        for st in schema.statements
        if (n := schema.creates(st))
        and (n <= _TABLES_V8 or all(name.startswith("jobs_") for name in n))
    ]
    upgrade_to_v8(conn, table, creates)
    return 8


def _upgrade_steps() -> dict[int, Callable[["SQLiteSchema", sqlite3.Connection], int]]:
    # Maps version N to the step that upgrades a database of version N and
    # returns the version it reached: N + 1, or a later one for a step that
    # rebuilds a table from the latest schema. The steps run in order inside
    # the one transaction that also records the new version. A new database
    # gets schema.sql whole instead, which is always the latest version.
    return {
        1: _upgrade_to_v2,
        2: _upgrade_to_v3,
        3: _upgrade_to_v4,
        4: _upgrade_to_v5,
        5: _upgrade_to_v6,
        6: _upgrade_to_v7,
        7: _upgrade_to_v8,
    }


_UPGRADES = _upgrade_steps()


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
    if version < 0 or any(step not in _UPGRADES for step in range(max(version, 1), SCHEMA_VERSION)):
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


class _CatalogRow(NamedTuple):
    what: str
    name: str
    type_: str
    not_null: int


# A table's columns and indexes in one read: sqlc cannot read SQLite's
# pragma functions, so this catalog read is written here, like the PRAGMAs.
_DESCRIBE_TABLE = (
    "SELECT 'column', name, type, \"notnull\" FROM pragma_table_info(?1) "
    "UNION ALL SELECT 'index', name, '', 0 FROM pragma_index_list(?1)"
)


def _describe(conn: sqlite3.Connection, table: str) -> Table:
    return Table.of(_CatalogRow(*row) for row in conn.execute(_DESCRIBE_TABLE, (table,)))


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
