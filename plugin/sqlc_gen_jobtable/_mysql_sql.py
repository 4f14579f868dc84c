"""MySQL through PyMySQL: the request made ready, the commands it takes, its SQL rewritten.

sqlc hands MySQL queries with ``?`` placeholders; PyMySQL formats the query
with Python's ``%`` operator, so each ``?`` becomes ``%s`` and, in a query
that is given parameters, every other percent sign is doubled. A ``?`` in a
string, a quoted identifier or a comment is text and stays as it is.
"""

import dataclasses
import pathlib
import re

from ._mysql_types import set_types
from ._request import Query, Request, RequestError

# MySQL's opaque units: strings in either quote (backslash escapes and
# doubled quotes), quoted identifiers, and the three kinds of comments. An
# executable comment (/*! ... */) is code to MySQL; sqlc does not read it,
# so a ? inside one is not a parameter of sqlc's either.
_OPAQUE = re.compile(
    r"""
    '(?:[^'\\]|\\.|'')*'
    | "(?:[^"\\]|\\.|"")*"
    | `(?:[^`]|``)*`
    | --(?:[ \t\r\n\f\v][^\n]*|$)
    | \#[^\n]*
    | /\*(?s:.*?)\*/
    """,
    re.VERBOSE | re.DOTALL,
)
_SLICE = re.compile(r"/\*SLICE:(\w+)\*/\?")
# Commands a PyMySQL connection cannot run as sqlc means them.
_REFUSED = {
    ":batchone": "PyMySQL has no pipeline to send the statements in one round trip",
    ":batchmany": "PyMySQL has no pipeline to send the statements in one round trip",
}


def mysql_sql(text: str, where: str) -> tuple[str, int]:
    """Returns text with each ? placeholder as %s, and the number of placeholders.

    Percent signs are doubled when the query has placeholders, as PyMySQL
    then formats it with ``%``; a ``/*SLICE:name*/?`` marker of sqlc.slice
    keeps its comment, ``/*SLICE:name*/%s``, for the call to expand.
    """
    pieces = [""]  # the text between placeholders
    i = 0
    while i < len(text):
        char = text[i]
        marker = _SLICE.match(text, i) if char == "/" else None
        opaque = _OPAQUE.match(text, i) if char in "'\"`-#/" else None
        if marker is not None:
            pieces[-1] += marker.group()[:-1]
            pieces.append("")
            i = marker.end()
        elif opaque is not None:
            pieces[-1] += opaque.group()
            i = opaque.end()
        elif char in "'\"`" or text.startswith("/*", i):
            raise RequestError(f"{where}: unterminated quote or comment in the SQL")
        elif char == "?":
            pieces.append("")
            i += 1
        else:
            pieces[-1] += char
            i += 1
    if len(pieces) > 1:
        pieces = [p.replace("%", "%%") for p in pieces]
    return "%s".join(pieces), len(pieces) - 1


def check_mysql_command(query: Query, where: str) -> None:
    """Raises RequestError when query cannot run through PyMySQL as sqlc means it."""
    reason = _REFUSED.get(query.cmd)
    if reason is not None:
        raise RequestError(
            f"{where}: {query.cmd} is not supported on MySQL: {reason}; "
            "call a :one or :many query in a loop"
        )
    if any(p.column.is_sqlc_slice for p in query.params) and query.cmd in (
        ":batchexec",
        ":copyfrom",
    ):
        raise RequestError(f"{where}: sqlc.slice cannot be used in a {query.cmd} query on MySQL")


def mysql_statement(
    query: Query, fields: dict[int, str], where: str
) -> tuple[str, tuple[str, ...]]:
    """Returns query's SQL for PyMySQL and the parameters of its sqlc.slice calls in order.

    fields names each parameter's field by its number; each slice's marker
    is renamed after its field (``/*SLICE:name*/%s``), which the call
    replaces. Raises RequestError when the placeholders and sqlc's
    parameters differ in number.
    """
    sql, count = mysql_sql(query.text.strip(), where)
    if count != len(query.params):
        raise RequestError(
            f"{where}: the SQL has {count} placeholders, sqlc lists {len(query.params)} parameters"
        )
    by_name = {p.column.name: fields[p.number] for p in query.params if p.column.is_sqlc_slice}
    slices: list[str] = []

    def rename(match: re.Match[str]) -> str:
        name = by_name.get(match.group(1))
        if name is None:
            raise RequestError(f"{where}: sqlc.slice({match.group(1)}) has no parameter")
        slices.append(name)
        return f"/*SLICE:{name}*/%s"

    sql = re.sub(r"/\*SLICE:(\w+)\*/%s", rename, sql)
    return sql, tuple(slices)


def _read_schema(request: Request) -> str:
    """Returns the text of the schema files, "" for one that cannot be read."""
    parts: list[str] = []
    for name in request.schema_paths:
        path = pathlib.Path(name)
        for file in sorted(path.glob("*.sql")) if path.is_dir() else [path]:
            try:
                parts.append(file.read_text(encoding="utf-8"))
            except OSError as err:
                raise RequestError(
                    f"MySQL SET columns: cannot read {file}: {err.strerror}; "
                    "run sqlc from the directory of sqlc.yaml"
                ) from None
    return "\n;\n".join(parts)


def mysql_request(request: Request) -> Request:
    """Returns request with its SET columns told apart from its ENUM ones.

    sqlc makes an enum of both; a SET is a frozenset of strings, not a member
    of an enum class, so its enum leaves the request and its name goes to
    ``sets``. Only a schema with enums is read.
    """
    if request.engine != "mysql" or not request.enums:
        return request
    tables = tuple(t.name for t in request.tables)
    sets = set_types(_read_schema(request), request.enums, tables)
    enums = tuple(e for e in request.enums if e.name.lower() not in sets)
    return dataclasses.replace(request, enums=enums, sets=tuple(sorted(sets)))
