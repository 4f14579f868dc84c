"""Maps PostgreSQL's types to the Python types asyncpg decodes them to, with no codec set.

asyncpg decodes each builtin type in its binary format to a Python value of
its own choosing; this map holds the types whose value is a standard type
the generated code can name exactly. A type left out (ranges, geometric
types, bit strings, composites, extension types, ...) is refused with a
message that names it, since what asyncpg returns for it is an asyncpg class
or depends on the codecs the connection registered: an override maps it.
"""

from collections.abc import Mapping

from ._pytype import STR, PyType
from ._request import Column, RequestError
from ._untyped import POLYMORPHIC

# The types asyncpg decodes to the same Python type as psycopg does.
_AS_PSYCOPG = frozenset(
    {
        "smallint",
        "int2",
        "integer",
        "int",
        "int4",
        "bigint",
        "int8",
        "serial",
        "serial4",
        "smallserial",
        "serial2",
        "bigserial",
        "serial8",
        "oid",
        "text",
        "varchar",
        "character varying",
        "char",
        "character",
        "bpchar",
        "name",
        "bool",
        "boolean",
        "real",
        "float4",
        "float8",
        "double precision",
        "numeric",
        "decimal",
        "bytea",
        "uuid",
        "timestamp",
        "timestamp without time zone",
        "timestamptz",
        "timestamp with time zone",
        "date",
        "time",
        "timetz",
        "interval",
        # asyncpg returns an address for a full-length prefix, else an
        # interface, as psycopg does.
        "inet",
        "cidr",
        # Types asyncpg decodes through their text form.
        "money",
        "xml",
        "macaddr",
        "macaddr8",
    }
)
# asyncpg sends and returns JSON as its text unless the connection sets a
# codec for it (Connection.set_type_codec): the code takes the text.
_JSON_TEXT = frozenset({"json", "jsonb"})


def asyncpg_base(
    column: Column, name: str, where: str, psycopg: Mapping[str, PyType]
) -> PyType | None:
    """Returns the Python type asyncpg decodes the type called name to.

    psycopg maps each type to the Python type psycopg decodes it to. Returns
    None for a name sqlc gives an untyped value (``any``, a pseudo-type),
    which the caller types ``object`` or refuses; raises RequestError,
    naming where and the column, for a type of no exact type.
    """
    if name in _AS_PSYCOPG:
        return psycopg[name]
    if name in _JSON_TEXT:
        return STR
    if name in ("any", "") or name in POLYMORPHIC:
        return None
    raise asyncpg_refusal(column, where, f"type {column.type_name!r}")


def asyncpg_refusal(column: Column, where: str, what: str) -> RequestError:
    """Returns the error for a column of a type the asyncpg driver has no exact type for."""
    return RequestError(
        f"{where}: column {column.name!r}: {what} has no exact Python type for "
        "asyncpg, which returns an asyncpg class or the value of a codec the "
        "connection registers: map it with an override (db_type or column) to "
        "the Python type the connection returns"
    )
