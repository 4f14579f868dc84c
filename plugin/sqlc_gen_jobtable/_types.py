"""Maps each engine's declared column types to exact Python types."""

import dataclasses
import re

from ._request import Column, RequestError


@dataclasses.dataclass(frozen=True, slots=True)
class PyType:
    """A Python type as the generated code spells it.

    ``imports`` are the modules the annotation needs; ``decode`` is a format
    string that turns the driver's value ``{}`` into the annotated type, for
    drivers that return another type (SQLite returns booleans as integers).
    ``encode`` likewise turns a parameter into what the driver takes.
    """

    annotation: str
    imports: tuple[str, ...] = ()
    decode: str = "{}"
    encode: str = "{}"


_INT = PyType("int")
_STR = PyType("str")
_FLOAT = PyType("float")
_BYTES = PyType("bytes")

# SQLite accepts any spelling and derives an affinity from it; these are the
# spellings in common use, each mapped to the type sqlite3 returns for it.
_SQLITE = {
    "integer": _INT,
    "int": _INT,
    "tinyint": _INT,
    "smallint": _INT,
    "mediumint": _INT,
    "bigint": _INT,
    "unsigned big int": _INT,
    "int2": _INT,
    "int4": _INT,
    "int8": _INT,
    "text": _STR,
    "clob": _STR,
    "character": _STR,
    "varchar": _STR,
    "varying character": _STR,
    "nchar": _STR,
    "native character": _STR,
    "nvarchar": _STR,
    "char": _STR,
    "json": _STR,
    "datetime": _STR,
    "timestamp": _STR,
    "date": _STR,
    "real": _FLOAT,
    "double": _FLOAT,
    "double precision": _FLOAT,
    "float": _FLOAT,
    "blob": _BYTES,
    "boolean": PyType("bool", decode="bool({})"),
    "bool": PyType("bool", decode="bool({})"),
}

_JSON = PyType(
    "JSONValue",
    imports=("psycopg.types.json",),
    encode="psycopg.types.json.Jsonb({})",
)

_POSTGRES = {
    "smallint": _INT,
    "int2": _INT,
    "integer": _INT,
    "int": _INT,
    "int4": _INT,
    "bigint": _INT,
    "int8": _INT,
    "serial": _INT,
    "serial4": _INT,
    "smallserial": _INT,
    "serial2": _INT,
    "bigserial": _INT,
    "serial8": _INT,
    "oid": _INT,
    "text": _STR,
    "varchar": _STR,
    "character varying": _STR,
    "char": _STR,
    "character": _STR,
    "bpchar": _STR,
    "citext": _STR,
    "name": _STR,
    "bool": PyType("bool"),
    "boolean": PyType("bool"),
    "real": _FLOAT,
    "float4": _FLOAT,
    "float8": _FLOAT,
    "double precision": _FLOAT,
    "numeric": PyType("decimal.Decimal", ("decimal",)),
    "decimal": PyType("decimal.Decimal", ("decimal",)),
    "bytea": _BYTES,
    "uuid": PyType("uuid.UUID", ("uuid",)),
    "json": _JSON,
    "jsonb": _JSON,
    "timestamp": PyType("datetime.datetime", ("datetime",)),
    "timestamp without time zone": PyType("datetime.datetime", ("datetime",)),
    "timestamptz": PyType("datetime.datetime", ("datetime",)),
    "timestamp with time zone": PyType("datetime.datetime", ("datetime",)),
    "date": PyType("datetime.date", ("datetime",)),
    "time": PyType("datetime.time", ("datetime",)),
    "timetz": PyType("datetime.time", ("datetime",)),
    "interval": PyType("datetime.timedelta", ("datetime",)),
}


def _sqlite_name(name: str) -> str:
    # Drop a length or precision, as in VARCHAR(255) or DECIMAL(10, 5).
    return re.sub(r"\s*\(.*\)\s*$", "", name).strip().lower()


def python_type(engine: str, column: Column, where: str) -> PyType:
    """Returns the Python type of column, None allowed when it is nullable.

    Raises RequestError naming where (the query or table), the column and the
    type when the type has no exact Python type.
    """
    if engine == "sqlite":
        base = _SQLITE.get(_sqlite_name(column.type_name))
        if column.is_array or column.array_dims:
            raise RequestError(f"{where}: column {column.name!r}: SQLite has no arrays")
    elif engine == "postgresql":
        name = column.type_name.lower().removeprefix("pg_catalog.")
        base = _POSTGRES.get(name)
    else:
        raise RequestError(f"engine {engine!r} is not supported: want sqlite or postgresql")
    if base is None:
        raise RequestError(
            f"{where}: column {column.name!r}: type {column.type_name!r} "
            f"has no exact Python type for {engine}"
        )
    result = base
    for _ in range(max(column.array_dims, 1 if column.is_array else 0)):
        inner = result.annotation
        if not column.not_null:
            # Elements of a PostgreSQL array may be NULL whatever the column says.
            inner = f"{inner} | None"
        result = PyType(
            f"list[{inner}]",
            result.imports,
            encode=result.encode if result.encode == "{}" else "{}",
        )
    if not column.not_null:
        decode = result.decode
        if decode != "{}":
            decode = "None if {} is None else " + decode
        encode = result.encode
        if encode != "{}":
            encode = "None if {} is None else " + encode
        result = PyType(f"{result.annotation} | None", result.imports, decode, encode)
    return result
