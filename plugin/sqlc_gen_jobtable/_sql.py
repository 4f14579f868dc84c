"""Rewrites the placeholders of sqlc's SQL into what each driver binds."""

import re

from ._request import Query, RequestError

# One lexical unit of SQL that may hold text looking like a placeholder without
# being one: a quoted string or identifier, a dollar-quoted string or a
# comment. Anything else is code, scanned character by character.
_POSTGRES_OPAQUE = re.compile(
    r"""
    [Ee]'(?:[^'\\]|\\.|'')*'                                 # escape string
    | '(?:[^']|'')*'                                         # string; '' is a quote
    | "(?:[^"]|"")*"                                         # quoted identifier
    | (?P<tag>\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)(?s:.*?)(?P=tag)  # dollar quotes
    | --[^\n]*                                               # line comment
    | /\*(?s:.*?)\*/                                          # block comment, not nested
    """,
    re.VERBOSE,
)
_PLACEHOLDER = re.compile(r"\$(\d+)")


def _opaque_at(text: str, i: int, where: str) -> int:
    """Returns the end of the opaque unit starting at i, or i when there is none.

    A unit starts only where a word does not: in a$1 or name$tag$ the $ is
    part of the name, in name' the E prefix of an escape string cannot be.
    """
    if text[i] not in "'\"$-/Ee" or (
        text[i] in "$Ee" and i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$")
    ):
        return i
    match = _POSTGRES_OPAQUE.match(text, i)
    if match is not None:
        return match.end()
    if text[i] in "'\"" or text.startswith("/*", i):
        raise RequestError(f"{where}: unterminated quote or comment in the SQL")
    return i


def postgres_sql(text: str, names: dict[int, str], where: str) -> str:
    """Rewrites $N placeholders as psycopg's %(name)s, doubling literal percent signs.

    Strings, quoted identifiers and comments keep their $N, since PostgreSQL
    reads no placeholder there. psycopg reads % only when it is given
    parameters, so a query without any keeps its percent signs as they are;
    in one with parameters every literal percent sign is doubled.
    """
    percent = "%%" if names else "%"
    out: list[str] = []
    i = 0
    while i < len(text):
        end = _opaque_at(text, i, where)
        if end > i:
            out.append(text[i:end].replace("%", percent))
            i = end
            continue
        match = _PLACEHOLDER.match(text, i)
        if match is not None and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$")):
            number = int(match.group(1))
            if number not in names:
                raise RequestError(f"{where}: ${number} has no parameter")
            out.append(f"%({names[number]})s")
            i = match.end()
        else:
            out.append(percent if text[i] == "%" else text[i])
            i += 1
    return "".join(out)


# SQLite's opaque units: strings, the three quotings of identifiers, comments.
_SQLITE_OPAQUE = re.compile(
    r"""
    '(?:[^']|'')*'
    | "(?:[^"]|"")*"
    | `(?:[^`]|``)*`
    | \[[^\]]*\]
    | --[^\n]*
    | /\*(?s:.*?)\*/
    """,
    re.VERBOSE,
)
_SLICE = re.compile(r"/\*SLICE:(\w+)\*/\?")
_SQLITE_PLACEHOLDER = re.compile(r"\?(\d*)")


def sqlite_slices(text: str, query: Query, where: str) -> tuple[str, list[int]]:
    """Rewrites a SQLite query with sqlc.slice for positional binding at call time.

    Every placeholder becomes a bare ?, in the order of the text; the
    ``/*SLICE:name*/?`` markers stay, for the call to replace with one ? per
    value. Returns the SQL and the parameter number of each placeholder in
    order, a number repeated where the SQL uses a parameter twice.
    """
    slices = {p.column.name: p.number for p in query.params if p.column.is_sqlc_slice}
    out: list[str] = []
    order: list[int] = []
    next_bare = 1
    i = 0
    while i < len(text):
        marker = _SLICE.match(text, i)
        if marker is not None:
            name = marker.group(1)
            if name not in slices:
                raise RequestError(f"{where}: sqlc.slice({name}) has no parameter")
            out.append(marker.group())
            order.append(slices[name])
            i = marker.end()
            continue
        opaque = _SQLITE_OPAQUE.match(text, i) if text[i] in "'\"`[-/" else None
        if opaque is not None:
            out.append(opaque.group())
            i = opaque.end()
            continue
        placeholder = _SQLITE_PLACEHOLDER.match(text, i) if text[i] == "?" else None
        if placeholder is not None:
            if placeholder.group(1):
                number = int(placeholder.group(1))
            else:
                while next_bare in slices.values():
                    next_bare += 1
                number = next_bare
                next_bare += 1
            order.append(number)
            out.append("?")
            i = placeholder.end()
            continue
        out.append(text[i])
        i += 1
    known = {p.number for p in query.params}
    unknown = sorted(set(order) - known)
    if unknown:
        raise RequestError(f"{where}: placeholder ?{unknown[0]} has no parameter")
    return "".join(out), order


# sqlc leaves sqlc.slice on PostgreSQL as IN ($n), which compares a value
# with the whole array; the rewrite compares it with each element.
_IN_SLICE = re.compile(r"(NOT\s+)?IN\s*\(\s*\$(\d+)\s*\)", re.IGNORECASE)
_SERIALS = {
    "serial": "int4",
    "serial4": "int4",
    "smallserial": "int2",
    "serial2": "int2",
    "bigserial": "int8",
    "serial8": "int8",
}


def slice_array_type(type_name: str, type_schema: str) -> str:
    """Returns the SQL array type a sqlc.slice of a column of type_name is cast to, or ""."""
    name = type_name.strip()
    bare = name.lower().removeprefix("pg_catalog.")
    if not name or bare in ("any", "unknown") or bare.startswith("any"):
        return ""
    name = _SERIALS.get(bare, name)
    if type_schema and "." not in name and type_schema != "pg_catalog":
        name = f"{type_schema}.{name}"
    return name + "[]"


def postgres_slices(text: str, arrays: dict[int, str], where: str) -> str:
    """Rewrites each ``IN ($n)`` of a sqlc.slice parameter n as ``= ANY($n::type[])``.

    arrays maps each slice's parameter number to its array type ("" for
    none known); ``NOT IN ($n)`` becomes ``<> ALL(...)``. Either keeps IN's
    meaning for every list, the empty one included (IN of no value is
    false, NOT IN true). A slice used otherwise (``= ANY(sqlc.slice(x))``)
    stays as written.
    """
    out: list[str] = []
    i = 0
    while i < len(text):
        end = _opaque_at(text, i, where)
        if end > i:
            out.append(text[i:end])
            i = end
            continue
        match = _IN_SLICE.match(text, i)
        starts_word = i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$")
        if match is not None and starts_word and int(match.group(2)) in arrays:
            number = int(match.group(2))
            cast = f"::{arrays[number]}" if arrays[number] else ""
            operator = "<> ALL" if match.group(1) else "= ANY"
            out.append(f"{operator}(${number}{cast})")
            i = match.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out)
