"""Holds sqlc's types against the server's: where they disagree, the server's win.

sqlc infers the type of an expression by rules of its own, which are wrong
for some functions and operators (``ceil`` of a numeric is a numeric, not a
float; ``NULLIF(a, b)`` has the type of ``a``). The check prepares every
query on the server, which says what it returns and takes; a column or
parameter whose Python type from the server's type differs from the one from
sqlc's takes the server's, keeping sqlc's nullability. Values sqlc infers no
type for stay ``object``, overridden ones keep their override, and a type
from the server that has no Python type is an error naming the query, the
column, both types and the fix.
"""

import dataclasses

from ._catalog import Catalog
from ._check import Described, ServerType
from ._expressions import column_expressions, may_be_null
from ._request import Column, Query, RequestError
from ._untyped import UNTYPED_NAMES


def _annotation(catalog: Catalog, column: Column, where: str) -> str | None:
    """Returns the annotation column maps to without its None, or None if it maps to none."""
    try:
        py = catalog.types._python_type(column, where, "")
    except RequestError:
        return None
    return py.annotation.removesuffix(" | None")


def _server_column(
    catalog: Catalog, column: Column, server: ServerType | None, where: str
) -> Column | None:
    """Returns column typed as the server says, or None when sqlc's type stands."""
    if server is None or column.is_sqlc_slice or column.embed_table:
        return None
    if not column.type_name or column.type_name.lower() in UNTYPED_NAMES:
        return None
    if catalog.types._override(column, "") is not None:
        return None
    dims = column.array_dims if column.is_array and server.is_array else int(server.is_array)
    theirs = dataclasses.replace(
        column,
        type_name=server.name,
        type_schema=server.schema,
        is_array=server.is_array,
        array_dims=dims,
    )
    mine = _annotation(catalog, column, where)
    their_annotation = _annotation(catalog, theirs, where)
    if mine is None or mine == their_annotation:
        return None
    # MySQL's booleans are integers, which the method reads as bools.
    if mine == "bool" and their_annotation == "int" and catalog.types.engine == "mysql":
        return None
    if their_annotation is None:
        sqlc = column.type_name + ("[]" if column.is_array else "")
        named = server.name + ("[]" if server.is_array else "")
        # A db_type override maps a nullable column only when it says so.
        nullable = "" if column.not_null else ", nullable: true"
        raise RequestError(
            f"{where}: column {column.name!r}: sqlc types it {sqlc} ({mine}), the server "
            f"{named}, which has no Python type here: CAST it in the SQL to the type "
            f"meant, or map {named} with an override (db_type: {server.name}, "
            f"py_type: ...{nullable})"
        )
    return theirs


def _result_columns(
    catalog: Catalog, query: Query, described: Described, where: str
) -> list[Column]:
    """Returns query's result columns, each typed as the server says where it disagrees."""
    columns = list(query.columns)
    expressions = column_expressions(query)
    at = 0
    for i, column in enumerate(query.columns):
        if column.embed_table:
            table = catalog.table(column.embed_schema, column.embed_table)
            at += len(table.columns) if table is not None else 1
            continue
        server = described.column_types[at] if at < len(described.column_types) else None
        at += 1
        if column.not_null and may_be_null(expressions[i], query):
            # As the plan reads it (NULLIF, say): an override must say nullable.
            column = dataclasses.replace(column, not_null=False)
        replaced = _server_column(catalog, column, server, f"{where}: column {i + 1}")
        if replaced is not None:
            columns[i] = replaced
    return columns


def reconcile(catalog: Catalog, query: Query, described: Described) -> Query:
    """Returns query with the types the server gives where they differ from sqlc's.

    Raises RequestError when the server's type of a column has no Python type.
    """
    where = f"query {query.name} ({query.filename})"
    columns = _result_columns(catalog, query, described, where)
    # The server numbers psycopg's parameters in the order their names
    # first stand in the SQL; asyncpg's are sqlc's $N.
    ordered = sorted(query.params, key=lambda p: p.number)
    if described.param_names:
        by_name = dict(zip(_param_names(catalog, query), ordered, strict=True))
        numbers = [by_name[name].number for name in described.param_names if name in by_name]
    else:
        numbers = [p.number for p in ordered]
    server_of = dict(zip(numbers, described.param_types, strict=False))
    params = []
    for param in query.params:
        column = _server_column(
            catalog, param.column, server_of.get(param.number), f"{where}: parameter"
        )
        params.append(param if column is None else dataclasses.replace(param, column=column))
    if columns == list(query.columns) and params == list(query.params):
        return query
    return dataclasses.replace(query, columns=tuple(columns), params=tuple(params))


def _param_names(catalog: Catalog, query: Query) -> list[str]:
    """Returns the names the plan gives query's parameters, in the order of their numbers."""
    return [field.name for _, field in catalog.params(query.params, "")]
