"""The PostgreSQL schema as jobtable opens it: created, checked or upgraded, all or nothing.

The engine adapter (``_postgres.py``) hands in the generated queries of
postgres/queries/schema_version.sql and the schema text, so that the
generated package stays behind it.
"""

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import LiteralString, Protocol, cast

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.postgres.upgrades import (
    upgrade_to_v2,
    upgrade_to_v3,
    upgrade_to_v4,
    upgrade_to_v5,
    upgrade_to_v6,
    upgrade_to_v7,
    upgrade_to_v8,
    upgrade_to_v9,
    upgrade_to_v10,
    upgrade_to_v11,
    upgrade_to_v12,
    upgrade_to_v13,
    upgrade_to_v14,
    upgrade_to_v15,
    upgrade_to_v16,
    upgrade_to_v17,
)
from jobtable._engines.tables import CatalogRow, Table, check_tables, tables_refusal
from jobtable._errors import StoreError, schema_refusal

_Connection = psycopg.Connection[TupleRow]


class _Applied(Protocol):
    @property
    def applied(self) -> bool: ...


class _Version(Protocol):
    @property
    def version(self) -> int: ...


class _Denied(Protocol):
    @property
    def denied(self) -> bool: ...


class SchemaQueries(Protocol):
    """The queries of postgres/queries/schema_version.sql that apply_schema runs."""

    def create_search_path_schema(self) -> None: ...
    def lift_statement_timeout(self) -> None: ...
    def lock_schema(self) -> None: ...
    def schema_applied(self) -> _Applied | None: ...
    def get_schema_version(self) -> _Version | None: ...
    def set_schema_version(self, *, version: int) -> None: ...
    def describe_table(self, *, table_name: str) -> Sequence[CatalogRow]: ...
    def use_temporary_schema(self) -> None: ...
    def search_path_schema_denied(self) -> _Denied | None: ...


SCHEMA_VERSION = 17
"""The schema version this library writes, recorded in the jobtable_schema table.

Bump it with every change to postgres/schema.sql, and add the step from the
previous version to ``_UPGRADES``.
"""


def _upgrade_steps() -> dict[int, Callable[[_Connection], None]]:
    # Maps version N to the step that brings a schema from N to N + 1, run in
    # order inside the one transaction that also records the new version. A
    # new schema gets schema.sql whole instead, which is always the latest
    # version.
    return {
        1: upgrade_to_v2,
        2: upgrade_to_v3,
        3: upgrade_to_v4,
        4: upgrade_to_v5,
        5: upgrade_to_v6,
        6: upgrade_to_v7,
        7: upgrade_to_v8,
        8: upgrade_to_v9,
        9: upgrade_to_v10,
        10: upgrade_to_v11,
        11: upgrade_to_v12,
        12: upgrade_to_v13,
        13: upgrade_to_v14,
        14: upgrade_to_v15,
        15: upgrade_to_v16,
        16: upgrade_to_v17,
    }


_UPGRADES = _upgrade_steps()


def schema_version(q: SchemaQueries, where: str) -> int:
    """Returns the version of the jobtable schema in the current schema, 0 when it has none.

    Only reads. Raises StoreError for a version newer than this library's or
    one it never wrote.
    """
    applied = q.schema_applied()
    if applied is None or not applied.applied:
        return 0
    row = q.get_schema_version()
    if row is None:
        raise StoreError(f"cannot open {where}: its jobtable_schema table has no row")
    if not isinstance(row.version, int) or row.version < 1:
        raise StoreError(
            f"cannot open {where}: its schema version {row.version!r} is not one jobtable "
            "ever wrote; the database is left as it is"
        )
    if row.version > SCHEMA_VERSION:
        raise StoreError(
            f"cannot open {where}: its schema version {row.version} is newer than this "
            f"jobtable's ({SCHEMA_VERSION}); upgrade jobtable"
        )
    return row.version


# The schema's statements, one match each: a quoted string, a dollar-quoted
# body or a comment may hold a semicolon that ends nothing.
_STATEMENT = re.compile(r"(?:--[^\n]*|'(?:[^']|'')*'|\$\$.*?\$\$|[^;'$-]++|[$-])*+;", re.DOTALL)
_COMMENT = re.compile(r"--[^\n]*")
_CREATE = re.compile(r"\s*CREATE\s+(?:UNIQUE\s+)?(TABLE|INDEX)\s+(\w+)", re.IGNORECASE)

# The reference tables of each schema text, read once per process.
_REFERENCES: dict[str, dict[str, Table]] = {}


def _reference_tables(
    conn: _Connection, q: SchemaQueries, schema: LiteralString
) -> dict[str, Table]:
    """The tables of schema as a new database gets them.

    Its tables and indexes (not its functions and triggers, which the
    temporary schema cannot hold) are created in the session's temporary
    schema, inside a savepoint that is rolled back: nothing remains of them.
    """
    if schema not in _REFERENCES:
        created = [
            (found[1].upper(), found[2].lower(), statement)
            for statement in _STATEMENT.findall(schema)
            if (found := _CREATE.match(_COMMENT.sub("", statement)))
        ]
        with conn.transaction(force_rollback=True):
            q.use_temporary_schema()
            for _, _, statement in created:
                conn.execute(cast("LiteralString", statement))
            _REFERENCES[schema] = {
                name: Table.of(q.describe_table(table_name=name))
                for what, name, _ in created
                if what == "TABLE"
            }
    return _REFERENCES[schema]


def _check_tables(
    conn: _Connection, q: SchemaQueries, schema: LiteralString, where: str, version: int
) -> None:
    """Refuses a schema whose tables differ from schema's, naming each difference.

    Building the reference needs the TEMPORARY right on the database (which
    PostgreSQL gives PUBLIC by default): a role without it gets a StoreError
    naming the grant.
    """
    try:
        reference = _reference_tables(conn, q, schema)
    except psycopg.errors.InsufficientPrivilege as err:
        raise StoreError(
            f"cannot open {where}: opening compares its tables with the expected ones, "
            "built for a moment in the session's temporary schema, and this role may not "
            f"create temporary tables ({err.diag.message_primary}); grant it that right: "
            f"GRANT TEMPORARY ON DATABASE {conn.info.dbname} TO {conn.info.user}"
        ) from None
    check_tables(
        reference,
        lambda table: Table.of(q.describe_table(table_name=table)),
        tables_refusal(where, version, SCHEMA_VERSION),
    )


def _refuse_denied_schema(q: SchemaQueries, where: str) -> None:
    """Raises StoreError when the search_path's schema exists but this role may not use it."""
    row = q.search_path_schema_denied()
    if row is not None and row.denied:
        raise StoreError(
            f"cannot open {where}: the schema its search_path names exists, but this role "
            "may not use it (no USAGE right on it); its owner gives a role the rights it "
            "needs with `jobtable grant ROLE`"
        )


def _not_the_owner(where: str, err: psycopg.errors.InsufficientPrivilege) -> StoreError:
    """The StoreError for a role that may use the tables but not create or upgrade them."""
    return StoreError(
        f"cannot open {where}: its jobtable schema needs creating or upgrading to version "
        f"{SCHEMA_VERSION}, which this role may not do ({err}); run `jobtable migrate` as "
        "the schema's owner, then `jobtable grant ROLE` for this role"
    )


def apply_schema(
    conn: _Connection, q: SchemaQueries, schema: LiteralString, where: str, *, upgrade: bool = True
) -> None:
    """Creates or upgrades the schema in the connection's current schema, all or nothing.

    The first schema of the search_path is created first when it does not
    exist. Processes opening at once take turns on an advisory lock. Raises
    StoreError, and writes nothing, for a schema newer than this library's
    or of a version it never wrote; without upgrade, also for a schema that
    is missing or older, which it then leaves as it is. A role that may not
    use the search_path's schema, or may not create or upgrade what is due
    (not its owner), gets a StoreError saying who may. A statement_timeout
    the role sets does not bound the transaction that applies or upgrades
    (``LiftStatementTimeout``). q runs on conn;
    schema is postgres/schema.sql.
    """
    if not upgrade:
        with conn.transaction():
            version = schema_version(q, where)
            if version == SCHEMA_VERSION:
                _check_tables(conn, q, schema, where, version)
            elif version == 0:
                _refuse_denied_schema(q, where)
        if version < SCHEMA_VERSION:
            raise StoreError(schema_refusal(where, version, SCHEMA_VERSION))
        return
    _refuse_denied_schema(q, where)
    # Another process may create it at the same moment.
    with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateSchema):
        q.create_search_path_schema()
    try:
        _create_or_upgrade(conn, q, schema, where)
    except psycopg.errors.InsufficientPrivilege as err:
        raise _not_the_owner(where, err) from None


def _create_or_upgrade(
    conn: _Connection, q: SchemaQueries, schema: LiteralString, where: str
) -> None:
    with conn.transaction():
        # Waiting for another process's upgrade, or rewriting a large table,
        # may outlast a role's statement_timeout.
        q.lift_statement_timeout()
        q.lock_schema()
        version = schema_version(q, where)
        if version == 0:
            conn.execute(schema)
            q.set_schema_version(version=SCHEMA_VERSION)
            return
        if version < SCHEMA_VERSION:
            step = version
            while step < SCHEMA_VERSION:
                _UPGRADES[step](conn)
                step += 1
            q.set_schema_version(version=SCHEMA_VERSION)
        _check_tables(conn, q, schema, where, version)
