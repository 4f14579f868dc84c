"""Checks each generated MySQL constant on a server, as ``_check`` does for the other engines.

PyMySQL speaks MySQL's text protocol only, which has no describe: each
constant is prepared with SQL's ``PREPARE`` in a scratch database made from
the schema, its parameter count found by ``EXECUTE``, which refuses any
other count before it runs anything, and a query that returns rows run once
with every parameter 1, in a transaction rolled back, for the width of its
result and the type of each of its columns, which the server sends with
the rows (``cursor.description``). The scratch database is dropped after.
"""

import re
import secrets
import urllib.parse
from typing import TYPE_CHECKING

from ._check import Described, Descriptions, ServerType, result_columns
from ._plan import QueryPlan
from ._request import RequestError

if TYPE_CHECKING:
    import pymysql.cursors

MYSQL_URL = "SQLC_GEN_JOBTABLE_MYSQL_URL"
# MySQL's error for EXECUTE given another number of values than ? marks.
_WRONG_ARGUMENTS = 1210
_PLACEHOLDER = re.compile(r"/\*SLICE:\w+\*/%s|%s|%%")
# MySQL's error for a text with no statement in it (comments only).
_EMPTY_QUERY = 1065
_CREATE_DATABASE = re.compile(
    r"\bCREATE\s+(?:SCHEMA|DATABASE)\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?", re.IGNORECASE
)
# The name in sqlc's MySQL catalog of each result type code the server
# sends (PyMySQL's FIELD_TYPE) whose Python type it settles. A string's or
# a blob's code says nothing of ENUM, SET or JSON, and its charset tells
# text from bytes: those stay sqlc's.
_TYPE_CODES = {
    0: "decimal",
    246: "decimal",
    1: "tinyint",
    2: "smallint",
    3: "int",
    9: "mediumint",
    8: "bigint",
    13: "year",
    4: "float",
    5: "double",
    10: "date",
    14: "date",
    12: "datetime",
    7: "timestamp",
    11: "time",
    16: "bit",
}


def server_sql(plan: QueryPlan) -> str:
    """Returns plan's SQL as the server prepares it: %s as ?, each slice one value, %% as %."""
    if not plan.binds:
        return plan.sql
    return _PLACEHOLDER.sub(lambda m: "%" if m.group() == "%%" else "?", plan.sql)


def _takes(cur: "pymysql.cursors.Cursor", count: int) -> bool:
    """Tells whether the prepared statement s takes count parameters, without running it
    when it does not."""
    import pymysql

    values = ", ".join(["@sqlc_gen_jobtable_p"] * count)
    try:
        cur.execute("EXECUTE sqlc_gen_jobtable_s" + (f" USING {values}" if count else ""))
    except pymysql.err.MySQLError as err:
        return bool(err.args[0] != _WRONG_ARGUMENTS)
    return True


def _params(cur: "pymysql.cursors.Cursor", expected: int) -> int:
    """Returns how many parameters s takes: expected when the counts around it are refused."""
    if not _takes(cur, expected + 1) and (expected == 0 or not _takes(cur, expected - 1)):
        return expected
    found = (n for n in range(expected + 100) if n != expected and _takes(cur, n))
    return next(found, -1)


def _check_plan(
    cur: "pymysql.cursors.Cursor", plan: QueryPlan, found: Descriptions | None = None
) -> str:
    """Returns what is wrong with plan's SQL on the server, or "".

    found, when given, receives the type of each result column the server sent.
    """
    import pymysql

    where = f"query {plan.name} ({plan.filename}): its SQL constant"
    try:
        cur.execute("PREPARE sqlc_gen_jobtable_s FROM %s", (server_sql(plan),))
    except pymysql.err.MySQLError as err:
        return f"{where} does not prepare: {err.args[-1]}"
    params = _params(cur, len(plan.binds))
    if params < 0:
        return f"{where} takes other than the {len(plan.binds)} parameters the method binds"
    if params != len(plan.binds):
        return f"{where} takes {params} parameters, the method binds {len(plan.binds)}"
    expected = result_columns(plan)
    if expected is None:
        return ""
    values = ", ".join(["@sqlc_gen_jobtable_p"] * params)
    try:
        cur.execute("EXECUTE sqlc_gen_jobtable_s" + (f" USING {values}" if params else ""))
    except pymysql.err.MySQLError as err:
        return f"{where} does not run: {err.args[-1]}"
    description = cur.description or ()
    if len(description) != expected:
        return f"{where} returns {len(description)} columns, the method reads {expected}"
    if found is not None:
        # types-PyMySQL says str; the server sends the type code, an int.
        types = (_TYPE_CODES.get(int(column[1])) for column in description)
        found[(plan.filename, plan.name)] = Described(
            params,
            expected,
            column_types=tuple(None if t is None else ServerType("", t) for t in types),
        )
    return ""


def check_mysql(
    url: str, schema: str, plans: list[QueryPlan], found: Descriptions | None = None
) -> list[str]:
    """Returns an error for each plan whose SQL does not prepare on the server at url as planned.

    found, when given, receives the types of each plan's result columns.

    Raises RequestError when PyMySQL is missing or the server cannot be reached.
    """
    try:
        import pymysql
    except ImportError:
        raise RequestError(
            f"{MYSQL_URL} is set, but PyMySQL is not installed where the plugin runs"
        ) from None
    parts = urllib.parse.urlsplit(url)
    try:
        conn = pymysql.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=urllib.parse.unquote(parts.username or "root"),
            password=urllib.parse.unquote(parts.password or ""),
            client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
        )
    except pymysql.err.MySQLError as err:
        raise RequestError(f"{MYSQL_URL}: cannot connect: {err.args[-1]}") from None
    database = f"sqlc_gen_jobtable_check_{secrets.token_hex(6)}"
    errors: list[str] = []
    with conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        existing = {str(row[0]).lower() for row in cur.fetchall()}
        cur.execute(f"CREATE DATABASE {database}")
        try:
            cur.execute(f"USE {database}")
            message = _run_schema(cur, schema)
            if message:
                return [message]
            cur.execute("SET @sqlc_gen_jobtable_p = 1")
            for plan in plans:
                cur.execute("START TRANSACTION")
                message = _check_plan(cur, plan, found)
                cur.execute("ROLLBACK")
                if message:
                    errors.append(message)
        finally:
            cur.execute(f"DROP DATABASE {database}")
            for other in _created_databases(schema) - existing:
                cur.execute(f"DROP DATABASE IF EXISTS `{other}`")
    return errors


def _run_schema(cur: "pymysql.cursors.Cursor", schema: str) -> str:
    """Runs schema's statements on cur; returns the server's error, or "".

    A schema of comments only (or none) is no statement, not an error.
    """
    import pymysql

    try:
        cur.execute(schema)
        while cur.nextset():
            pass
    except pymysql.err.MySQLError as err:
        if err.args[0] == _EMPTY_QUERY:
            return ""
        return f"the schema does not run on MySQL: {err.args[-1]}"
    return ""


def _created_databases(schema: str) -> set[str]:
    """Returns the (lower-cased) names of the databases schema creates, by CREATE SCHEMA or
    CREATE DATABASE: the check drops those it made, as it does its scratch database."""
    return {m.group(1).lower() for m in _CREATE_DATABASE.finditer(schema)}
