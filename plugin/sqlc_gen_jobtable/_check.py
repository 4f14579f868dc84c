"""Checks every generated SQL constant against the schema before any file is written.

A constant that was cut or rewritten wrong (see ``_sqlite_source``) reads as
plausible SQL; nothing but the database tells. So each constant is prepared
as the method sends it: on SQLite with ``EXPLAIN`` in a scratch database made
from the schema files, on PostgreSQL with ``PREPARE`` (through libpq's
describe) in a transaction that is rolled back, when the environment names a
server in ``SQLC_GEN_JOBTABLE_POSTGRES_URL``. Each must prepare, take as many
parameters as the method binds and return as many columns as it reads.
"""

import dataclasses
import os
import re
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._plan import QueryPlan
from ._request import RequestError

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

POSTGRES_URL = "SQLC_GEN_JOBTABLE_POSTGRES_URL"
_SLICE = re.compile(r"/\*SLICE:\w+\*/\?")
_PSYCOPG_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
_ROWS = (":one", ":many", ":batchone", ":batchmany")
# SQLite compiles DDL against the schema as it is, but a query file's DDL
# (an upgrade step) is written for another state of it: of DDL, only what
# makes the text wrong whatever the schema counts.
_DDL = re.compile(r"\s*(CREATE|ALTER|DROP)\b", re.IGNORECASE)
_MALFORMED = re.compile(
    r"syntax error|incomplete input|unrecognized token|one statement at a time|bindings",
    re.IGNORECASE,
)


def result_columns(plan: QueryPlan) -> int | None:
    """Returns how many columns plan's method reads from a row, None when it reads none."""
    if plan.command not in _ROWS:
        return None
    return sum(len(f.embed_fields) if f.embed else 1 for f in plan.row_fields)


def _mismatch(plan: QueryPlan, params: int, columns: int | None) -> str:
    """Returns what differs between the prepared statement and plan, or ""."""
    where = f"query {plan.name} ({plan.filename}): its SQL constant"
    if params != len(plan.binds):
        return f"{where} takes {params} parameters, the method binds {len(plan.binds)}"
    expected = result_columns(plan)
    if expected is not None and columns != expected:
        return f"{where} returns {columns} columns, the method reads {expected}"
    return ""


def check_sqlite(schema: str, plans: list[QueryPlan]) -> list[str]:
    """Returns an error for each plan whose SQL does not prepare on SQLite as planned.

    Each sqlc.slice stands for one value. EXPLAIN compiles the statement
    without running it; its ResultRow instruction tells the result's width.
    """
    conn = sqlite3.connect(":memory:")
    errors: list[str] = []
    try:
        conn.executescript(schema)
        for plan in plans:
            sql = _SLICE.sub("?", plan.sql)
            try:
                rows = conn.execute("EXPLAIN " + sql, [None] * len(plan.binds)).fetchall()
            except sqlite3.Error as err:
                if _DDL.match(sql) and not _MALFORMED.search(str(err)):
                    continue
                errors.append(
                    f"query {plan.name} ({plan.filename}): its SQL constant does not prepare: {err}"
                )
                continue
            widths = {row[3] for row in rows if row[1] == "ResultRow"}
            columns = max(widths) if widths else 0
            message = _mismatch(plan, len(plan.binds), columns)
            if message:
                errors.append(message)
    except sqlite3.Error as err:
        errors.append(f"the schema does not run on SQLite: {err}")
    finally:
        conn.close()
    return errors


def postgres_placeholders(sql: str) -> tuple[str, int]:
    """Returns sql with psycopg's %(name)s as $n, one n per name, and the count of names."""
    converted, names = _numbered(sql)
    return converted, len(names)


def _numbered(sql: str) -> tuple[str, list[str]]:
    """Returns sql with psycopg's %(name)s as $n, and the names in the order of n."""
    names: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return "%"
        return f"${names.setdefault(match.group(1), len(names) + 1)}"

    return _PSYCOPG_PLACEHOLDER.sub(number, sql), list(names)


@dataclasses.dataclass(frozen=True, slots=True)
class ServerType:
    """A type as the server names it: its schema ("" for the built-in and the
    default one), its name, and whether the value is an array of it."""

    schema: str
    name: str
    is_array: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Described:
    """What the server says of a prepared statement: its parameters and result columns.

    ``param_types`` and ``column_types``, when the server told them, hold
    each one's type (None where it named none that the plugin reads).
    ``params_by_name`` lists, for psycopg's SQL, the name of each numbered
    parameter in order.
    """

    params: int
    columns: int
    param_types: tuple[ServerType | None, ...] = ()
    column_types: tuple[ServerType | None, ...] = ()
    param_names: tuple[str, ...] = ()


# What the server said of each plan's SQL, by (file, query name).
Descriptions = dict[tuple[str, str], Described]


# A function that prepares SQL on the server and returns its description, or
# raises RequestError with the server's message.
Describe = Callable[[str], Described]


def check_postgres(
    describe: Describe, plans: list[QueryPlan], found: Descriptions | None = None
) -> list[str]:
    """Returns an error for each plan whose SQL does not prepare on PostgreSQL as planned.

    A COPY cannot be prepared; it is built from the INSERT that sqlc parsed.
    The asyncpg driver keeps that INSERT as the constant, which is prepared.
    found, when given, receives what the server said of each plan's SQL.
    """
    errors: list[str] = []
    for plan in plans:
        asyncpg = plan.driver == "asyncpg"
        if plan.command == ":copyfrom" and not asyncpg:
            continue
        # asyncpg's SQL is sqlc's, with its $N; psycopg's names them.
        sql, names = _numbered(plan.sql) if plan.params and not asyncpg else (plan.sql, [])
        try:
            described = describe(sql)
        except RequestError as err:
            errors.append(
                f"query {plan.name} ({plan.filename}): its SQL constant does not prepare: {err}"
            )
            continue
        message = _mismatch(plan, described.params, described.columns)
        if message:
            errors.append(message)
        elif found is not None:
            found[(plan.filename, plan.name)] = dataclasses.replace(
                described, param_names=tuple(names)
            )
    return errors


def server_describe(conn: "psycopg.Connection[TupleRow]") -> Describe:
    """Returns a Describe that prepares on conn, inside the transaction conn is in.

    Each statement is prepared under a savepoint, so that one that fails
    leaves the transaction usable for the next.
    """

    names: dict[int, ServerType] = {}

    def describe(sql: str) -> Described:
        conn.execute("SAVEPOINT sqlc_gen_jobtable_check")
        prepared = conn.pgconn.prepare(b"", sql.encode())
        if prepared.error_message:
            conn.execute("ROLLBACK TO SAVEPOINT sqlc_gen_jobtable_check")
            raise RequestError(prepared.error_message.decode(errors="replace").strip())
        result = conn.pgconn.describe_prepared(b"")
        params = [result.param_type(i) for i in range(result.nparams)]
        fields = [result.ftype(i) for i in range(result.nfields)]
        types = _type_names(conn, {*params, *fields}, names)
        return Described(
            result.nparams,
            result.nfields,
            tuple(types.get(oid) for oid in params),
            tuple(types.get(oid) for oid in fields),
        )

    return describe


# Each type's schema and name; an array's are its element's.
_TYPE_NAMES = """
SELECT t.oid::int8, n.nspname, t.typname, e.oid IS NOT NULL, en.nspname, e.typname
FROM pg_catalog.pg_type t
JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
LEFT JOIN pg_catalog.pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
LEFT JOIN pg_catalog.pg_namespace en ON en.oid = e.typnamespace
WHERE t.oid = ANY(%s::oid[])
"""
# The schemas whose types sqlc names without one: the built-in types' and
# the check's own, where the schema's types are made.
_UNQUALIFIED = ("pg_catalog", "public", "sqlc_gen_jobtable_check")


def _type_names(
    conn: "psycopg.Connection[TupleRow]", oids: set[int], known: dict[int, ServerType]
) -> dict[int, ServerType]:
    """Returns the ServerType of each of oids, reading those not in known (and adding them)."""
    missing = sorted(oid for oid in oids if oid and oid not in known)
    if missing:
        for oid, schema, name, is_array, element_schema, element in conn.execute(
            _TYPE_NAMES, [missing]
        ):
            if is_array:
                schema, name = element_schema, element
            known[oid] = ServerType("" if schema in _UNQUALIFIED else schema, name, is_array)
    return known


def check_on_server(
    url: str, schema: str, plans: list[QueryPlan], found: Descriptions | None = None
) -> list[str]:
    """Runs check_postgres on the server at url, in a transaction rolled back after.

    The schema runs in a schema of its own first on the search path. Raises
    RequestError when psycopg is missing or the server cannot be reached.
    """
    try:
        import psycopg
    except ImportError:
        raise RequestError(
            f"{POSTGRES_URL} is set, but psycopg is not installed where the plugin runs"
        ) from None
    try:
        conn = psycopg.connect(url)
    except psycopg.Error as err:
        raise RequestError(f"{POSTGRES_URL}: cannot connect: {err}") from None
    with conn:
        conn.execute("CREATE SCHEMA sqlc_gen_jobtable_check")
        conn.execute("SET LOCAL search_path = sqlc_gen_jobtable_check, public")
        try:
            conn.execute(schema.encode())
        except psycopg.Error as err:
            conn.rollback()
            return [f"the schema does not run on PostgreSQL: {err}"]

        errors = check_postgres(server_describe(conn), plans, found)
        conn.rollback()
    return errors


def check(engine: str, schema: str, plans: list[QueryPlan]) -> Descriptions:
    """Raises RequestError listing every plan whose SQL constant fails its check.

    Returns what the server said of each plan's SQL (on PostgreSQL and MySQL), for the
    types of its parameters and columns.
    """
    found: Descriptions = {}
    errors = check_sqlite(schema, plans) if engine == "sqlite" else []
    url = os.environ.get(POSTGRES_URL, "")
    if engine == "postgresql" and url:
        errors = check_on_server(url, schema, plans, found)
    mysql_url = os.environ.get("SQLC_GEN_JOBTABLE_MYSQL_URL", "")
    if engine == "mysql" and mysql_url:
        # Imported here: _mysql_check uses this module's result_columns.
        from ._mysql_check import check_mysql

        errors = check_mysql(mysql_url, schema, plans, found)
    if errors:
        raise RequestError(
            "generated SQL failed its check against the schema:\n  " + "\n  ".join(errors)
        )
    return found
