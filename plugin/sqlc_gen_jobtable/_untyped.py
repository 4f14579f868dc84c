"""What the generator says of a value sqlc infers no type for: a comment with the fix, or an error.

With ``untyped: object`` (the default) such a value is typed ``object`` and
its comment, from ``untyped_note``, names the expression and the CAST or
override that would type it; with ``untyped: refuse`` it is the error of
``untyped_error``.
"""

from ._request import Column, RequestError, UntypedError

# PostgreSQL's polymorphic pseudo-types, which sqlc gives a function's result
# (and max() and min()) when it does not resolve them.
POLYMORPHIC = frozenset(
    {"anyarray", "anyelement", "anynonarray", "anycompatible", "anycompatiblearray"}
)
# A result column's type in sqlc when it infers none.
UNTYPED_NAMES = frozenset({"any", *POLYMORPHIC})


def untyped_note(column: Column, engine: str, expression: str, owner: str) -> str:
    """Returns what the comment of an untyped value says: the expression and the fix."""
    expr = " ".join(expression.split()) or column.name
    name = column.type_name.lower()
    owner = owner or column.table
    if owner and engine == "sqlite":
        declared = f"declared {column.type_name}" if name != "any" else "declared without a type"
        source = f"{owner}.{column.original_name or column.name}"
        return (
            f"{source} is {declared}, so SQLite may return any type: "
            "declare INTEGER, REAL, TEXT or BLOB, or map it with a column override"
        )
    if owner and engine == "mysql" and name != "any":
        source = f"{owner}.{column.original_name or column.name}"
        return (
            f"{source} is declared {column.type_name}, which has no one Python type "
            "on MySQL: map it with a column override"
        )
    if expr.startswith("parameter "):
        cast = {"sqlite": "CAST(? AS TEXT)", "mysql": "CAST(? AS CHAR)"}.get(engine, "$1::text")
        return f"sqlc infers no type for {expr}: CAST it in the SQL, as in {cast}"
    wrapped = expr if expr.startswith("(") and expr.endswith(")") else f"({expr})"
    if engine == "sqlite":
        fix = f"CAST({expr} AS INTEGER)"
    elif engine == "mysql":
        fix = f"CAST({expr} AS SIGNED)"
    else:
        fix = f"{wrapped}::bigint" + ("[]" if "array" in name else "")
    if name in POLYMORPHIC:
        what = f"sqlc types {expr} as {name}"
    else:
        what = f"sqlc infers no type for {expr}"
    return f"{what}: CAST it, as in {fix}, or map it with an override"


def untyped_error(column: Column, engine: str, where: str) -> RequestError:
    """Returns the error that says why column has no Python type and how to give it one."""
    if engine == "sqlite" and column.type_name:
        return UntypedError(
            f"{where}: column {column.name!r}: type {column.type_name!r} "
            "has no one Python type on SQLite, which may return any type for it: "
            "declare INTEGER, REAL, TEXT or BLOB, or map it with an override"
        )
    if column.type_name.lower() == "any":
        return UntypedError(
            f"{where}: column {column.name!r}: sqlc infers no type for this "
            "expression: CAST it, as in CAST(x || y AS text) AS x, or map sqlc's "
            "type any with an override (db_type: any, py_type: ..., nullable: true)"
        )
    if not column.type_name and column.embed_table:
        return RequestError(f"{where}: column {column.name!r}: sqlc.embed is not supported here")
    if not column.type_name:
        return UntypedError(
            f"{where}: column {column.name!r}: sqlc infers no type for it: "
            "CAST it in the SQL, or map it with an override"
        )
    return RequestError(
        f"{where}: column {column.name!r}: type {column.type_name!r} "
        f"has no exact Python type for {engine}: map it with an override "
        "(db_type or column) to a Python type"
    )
