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
    ``decode_nullable`` and ``encode_nullable`` do the same for a nullable
    value; they call a helper of ``HELPERS`` (listed in ``helpers``) instead of
    an inline conditional, which ruff format would split over lines once a
    name is long.
    """

    annotation: str
    imports: tuple[str, ...] = ()
    decode: str = "{}"
    encode: str = "{}"
    decode_nullable: str = "{}"
    encode_nullable: str = "{}"
    helpers: tuple[str, ...] = ()


# The helper functions a generated query module defines when it uses them.
HELPERS = {
    "_bool_or_none": (
        "def _bool_or_none(value: int | None) -> bool | None:\n"
        "    return None if value is None else bool(value)"
    ),
    "_jsonb_or_none": (
        "def _jsonb_or_none(value: JSONValue | None) -> psycopg.types.json.Jsonb | None:\n"
        "    return None if value is None else psycopg.types.json.Jsonb(value)"
    ),
}


_INT = PyType("int")
_STR = PyType("str")
_FLOAT = PyType("float")
_BYTES = PyType("bytes")
_SQLITE_BOOL = PyType(
    "bool", decode="bool({})", decode_nullable="_bool_or_none({})", helpers=("_bool_or_none",)
)

# SQLite accepts any spelling and derives an affinity from it; these are the
# spellings in common use, each mapped to the type sqlite3 returns for it.
# sqlc joins the words of a type name (DOUBLE PRECISION arrives as
# DOUBLEPRECISION), so names are compared without spaces: see _sqlite_name.
_SQLITE_SPELLINGS = {
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
    "character varying": _STR,
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
    "boolean": _SQLITE_BOOL,
    "bool": _SQLITE_BOOL,
}

_JSON = PyType(
    "JSONValue",
    imports=("psycopg.types.json",),
    encode="psycopg.types.json.Jsonb({})",
    encode_nullable="_jsonb_or_none({})",
    helpers=("_jsonb_or_none",),
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
    # Drop a length or precision, as in VARCHAR(255) or DECIMAL(10, 5), the
    # quotes of a quoted name, and every space.
    name = re.sub(r"\(.*\)\s*$", "", name)
    return re.sub(r'[\s"`]+', "", name).lower()


_SQLITE = {_sqlite_name(name): py for name, py in _SQLITE_SPELLINGS.items()}


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
    dims = max(column.array_dims, 1 if column.is_array else 0)
    if dims and (base.encode != "{}" or base.decode != "{}"):
        raise RequestError(
            f"{where}: column {column.name!r}: type {column.type_name!r}: "
            f"arrays of {column.type_name} are not supported"
        )
    for _ in range(dims):
        inner = result.annotation
        if not column.not_null:
            # PostgreSQL cannot declare array elements NOT NULL: a nullable
            # array column is taken to hold nullable elements, a NOT NULL one
            # (whose elements a CHECK can keep from NULL) not.
            inner = f"{inner} | None"
        result = PyType(f"list[{inner}]", result.imports)
    if column.not_null:
        return dataclasses.replace(result, helpers=())
    return PyType(
        f"{result.annotation} | None",
        result.imports,
        decode=result.decode_nullable,
        encode=result.encode_nullable,
        helpers=result.helpers,
    )
