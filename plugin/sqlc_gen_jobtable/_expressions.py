"""The SQL of each result column, read from a query's select list, and what it tells.

sqlc sends a result column's name and type but not its expression. Where the
select list maps one item to each column (no ``*``, no ``sqlc.embed``), the
item is the column's expression: the comment of an untyped column names it,
and ``max(col)`` and ``min(col)`` of a table's column get that column's type.
"""

import dataclasses
import re

from ._request import Column, Query, Table

_AS = re.compile(r"\s+AS\s+(?:\w+|\"[^\"]+\")\s*$", re.IGNORECASE)
_EXTREME = re.compile(r"(?:max|min)\s*\(\s*(?:(\w+)\s*\.\s*)?(\w+)\s*\)", re.IGNORECASE)
# An expression that may be NULL whatever sqlc says: NULLIF(), and an
# aggregate that is NULL over no rows, as it is or cast (sqlc reports a cast
# NOT NULL).
_NULLIF = re.compile(r"\(*\s*(?:CAST\s*\(\s*)?\(*\s*NULLIF\s*\(", re.IGNORECASE)
_AGGREGATE = re.compile(r"\(*\s*(?:CAST\s*\(\s*)?\(*\s*(?:MAX|MIN|SUM|AVG)\s*\(", re.IGNORECASE)
_GROUP_BY = re.compile(r"\bGROUP\s+BY\b", re.IGNORECASE)
_FROM = re.compile(
    r"\b(?:FROM|JOIN)\s+(?!\()([\w.]+)(?:\s+(?:AS\s+)?(?!ON\b|WHERE\b|JOIN\b|LEFT\b|RIGHT\b"
    r"|INNER\b|FULL\b|CROSS\b|GROUP\b|ORDER\b|LIMIT\b|USING\b|NATURAL\b|HAVING\b|WINDOW\b"
    r"|UNION\b|RETURNING\b)(\w+))?",
    re.IGNORECASE,
)


def _top_level(sql: str) -> list[tuple[int, str]]:
    """Returns (depth, word) of each character run outside quotes: a tiny tokenizer."""
    out: list[tuple[int, str]] = []
    depth, i = 0, 0
    while i < len(sql):
        ch = sql[i]
        if ch in "'\"`":
            end = sql.find(ch, i + 1)
            end = len(sql) if end < 0 else end
            out.append((depth, sql[i : end + 1]))
            i = end + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        out.append((depth if ch != "(" else depth - 1, ch))
        i += 1
    return out


def select_items(sql: str) -> list[str] | None:
    """Returns the items of sql's select list, None when the SQL is not a plain SELECT."""
    tokens = _top_level(sql.strip())
    text = "".join(t for _, t in tokens)
    match = re.match(r"\s*SELECT\s+(?:DISTINCT\s+)?", text, re.IGNORECASE)
    if match is None:
        return None
    items: list[str] = []
    current = ""
    pos = 0
    for depth, tok in tokens:
        start = pos
        pos += len(tok)
        if start < match.end():
            continue
        if (
            depth == 0
            and re.match(r"\s*FROM\b", text[start:], re.IGNORECASE)
            and (not current or current[-1].isspace())
        ):
            break
        if depth == 0 and tok == ",":
            items.append(current.strip())
            current = ""
            continue
        current += tok
    items.append(current.strip())
    return items


def column_expressions(query: Query) -> list[str]:
    """Returns the expression of each result column of query, or "" for each if unknown."""
    blank = [""] * len(query.columns)
    if any(c.embed_table for c in query.columns):
        return blank
    items = select_items(query.text)
    if items is None or len(items) != len(query.columns):
        return blank
    if any(item == "*" or item.endswith(".*") for item in items):
        return blank
    return [_AS.sub("", item) for item in items]


@dataclasses.dataclass(frozen=True, slots=True)
class Source:
    """The table column a max() or min() reads, whose type the result has."""

    table: Table
    column: Column


# SQLite's rounding functions, which return an INTEGER for an integer and a
# REAL for anything else, where sqlc says they return an integer.
_ROUNDING = re.compile(
    r"(?:ceil|ceiling|floor|trunc)\s*\(\s*(?:([A-Za-z_]\w*)\s*\.\s*)?([-+]?[\d.]+(?:e[-+]?\d+)?|\w+)\s*\)",
    re.IGNORECASE,
)


def sqlite_rounding_is_real(expression: str, query: Query, tables: dict[str, Table]) -> bool:
    """Tells whether expression is SQLite's ceil(), floor() or trunc() of a REAL.

    That is of a number with a point or an exponent, or of a column of the
    tables query reads of REAL affinity (REAL, FLOAT, DOUBLE). Of anything
    else sqlc's word stands: an INTEGER gives an INTEGER, and a NUMERIC
    column holds either.
    """
    match = _ROUNDING.fullmatch(expression.strip())
    if match is None:
        return False
    argument = match.group(2)
    if argument[0].isdigit() or argument[0] in "-+.":
        return not argument.lstrip("+-").isdigit()
    source = extreme_source(expression, query, tables, _ROUNDING)
    declared = source.column.type_name.upper() if source is not None else ""
    return "INT" not in declared and any(word in declared for word in ("REAL", "FLOA", "DOUB"))


def extreme_source(
    expression: str, query: Query, tables: dict[str, Table], pattern: re.Pattern[str] = _EXTREME
) -> Source | None:
    """Returns the column that expression takes the max() or min() of, None if unsure.

    tables maps each table's name to it. The query must read only tables of
    the schema (no WITH, no subquery in FROM) and the column must be found
    in exactly one of them, or in the one its qualifier names. pattern
    matches another function of one column.
    """
    match = pattern.fullmatch(expression.strip())
    if match is None or re.search(r"\bWITH\b", query.text, re.IGNORECASE):
        return None
    if re.search(r"\b(?:FROM|JOIN)\s*\(", query.text, re.IGNORECASE):
        return None
    read: dict[str, Table] = {}
    for name, alias in _FROM.findall(query.text):
        table = tables.get(name.split(".")[-1])
        if table is None:
            return None
        read[alias or table.name] = table
        read.setdefault(table.name, table)
    qualifier, name = match.group(1), match.group(2)
    candidates = {id(t): t for t in read.values()} if not qualifier else {}
    if qualifier:
        table = read.get(qualifier)
        candidates = {id(table): table} if table is not None else {}
    found = [(t, c) for t in candidates.values() for c in t.columns if c.name == name]
    if len(found) != 1:
        return None
    return Source(*found[0])


def may_be_null(expression: str, query: Query) -> bool:
    """Tells whether a select item of query may be NULL though sqlc reports it NOT NULL.

    That is an item that is, or casts, NULLIF() (NULL when its arguments are
    equal), or an aggregate that is NULL over no rows (max, min, sum, avg) in
    a query without GROUP BY, whose one row may aggregate none. (Under GROUP
    BY every group has a row, and sqlc's word on the column is kept.)
    """
    item = expression.strip()
    if _NULLIF.match(item):
        return True
    return _AGGREGATE.match(item) is not None and not _GROUP_BY.search(query.text)
