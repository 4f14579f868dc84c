"""Maps each engine's declared column types to exact Python types.

Annotations that name a model (an enum class, a type alias) spell it
``models.Name``; the models module itself drops the prefix.
"""

import dataclasses
import re

from ._request import Column, RequestError


@dataclasses.dataclass(frozen=True, slots=True)
class PyType:
    """A Python type as the generated code spells it.

    ``decode`` is a format string that turns the driver's value ``{}`` into
    the annotated type, for drivers that return another type (SQLite returns
    booleans as integers).
    ``encode`` likewise turns a parameter into what the driver takes.
    ``decode_nullable`` and ``encode_nullable`` do the same for a nullable
    value; they call a helper of ``HELPERS`` instead of an inline
    conditional, which ruff format would split over lines once a name is
    long (the module defines the helpers its code calls). ``aliases`` are the
    type aliases of ``ALIASES`` that the models module defines for the
    annotation.
    """

    annotation: str
    decode: str = "{}"
    encode: str = "{}"
    decode_nullable: str = "{}"
    encode_nullable: str = "{}"
    aliases: tuple[str, ...] = ()


# The helper functions a generated query module defines when its code calls
# them, each as ruff format writes it.
_HELPER_SOURCE = r"""
def _bool_or_none(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _jsonb_or_none(value: JSONValue | None) -> psycopg.types.json.Jsonb | None:
    return None if value is None else psycopg.types.json.Jsonb(value)


def _jsonb_list(
    values: list[JSONValue] | list[JSONValue | None] | None,
) -> list[psycopg.types.json.Jsonb | None] | None:
    if values is None:
        return None
    return [None if v is None else psycopg.types.json.Jsonb(v) for v in values]


def _or_none(convert: Callable[[_V], _T], value: _V | None) -> _T | None:
    return None if value is None else convert(value)


def _pg_array(value: object) -> list[str | None]:
    # psycopg returns an array of a type it does not know in its text form,
    # {a,"b c",NULL}, and as a list once the type is registered.
    if isinstance(value, list):
        return [None if v is None else str(v) for v in value]
    if not isinstance(value, str) or value[:1] != "{" or value[-1:] != "}":
        raise TypeError(f"not a one-dimensional array: {value!r}")
    items: list[str | None] = []
    for quoted, bare in re.findall(r'"((?:[^"\\]|\\.)*)"|([^,{}]+)', value[1:-1]):
        if bare:
            items.append(None if bare == "NULL" else bare)
        else:
            items.append(re.sub(r"\\(.)", r"\1", quoted))
    return items


def _not_null(value: str | None) -> str:
    if value is None:
        raise TypeError("NULL in an array declared without NULLs")
    return value


def _text_array(kind: Callable[[str], _T], value: object) -> list[_T]:
    return [kind(_not_null(v)) for v in _pg_array(value)]


def _text_array_or_none(
    kind: Callable[[str], _T],
    value: object,
) -> list[_T | None] | None:
    if value is None:
        return None
    return [None if v is None else kind(v) for v in _pg_array(value)]


def _hstore(value: object) -> dict[str, str | None]:
    # psycopg returns hstore in its text form unless register_hstore ran.
    if isinstance(value, dict):
        return {str(k): None if v is None else str(v) for k, v in value.items()}
    if not isinstance(value, str):
        raise TypeError(f"not an hstore: {value!r}")
    quoted = r'"((?:[^"\\]|\\.)*)"'
    out: dict[str, str | None] = {}
    pair = quoted + r"\s*=>\s*(?:(NULL)|" + quoted + ")"
    for key, null, val in re.findall(pair, value):
        text = None if null else re.sub(r"\\(.)", r"\1", val)
        out[re.sub(r"\\(.)", r"\1", key)] = text
    return out


def _hstore_text(value: dict[str, str | None]) -> str:
    pairs = [_hstore_value(k) + "=>" + _hstore_value(v) for k, v in value.items()]
    return ", ".join(pairs)


def _hstore_value(value: str | None) -> str:
    if value is None:
        return "NULL"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _decimal(value: float | str) -> decimal.Decimal:
    # SQLite stores a NUMERIC as an integer or a float where it can.
    return decimal.Decimal(str(value))


def _decimal_text(value: decimal.Decimal | None) -> str | None:
    return None if value is None else str(value)


def _all_null(values: tuple[object, ...]) -> bool:
    return all(v is None for v in values)


def _marks(count: int) -> str:
    # sqlc.slice: one placeholder per value; for none, an empty set, which
    # IN matches to nothing and NOT IN to everything.
    return ", ".join("?" * count) or "SELECT NULL WHERE 0"
"""
HELPERS = {
    block.split("(", 1)[0].removeprefix("def "): block.strip()
    for block in _HELPER_SOURCE.strip().split("\n\n\ndef ")
    for block in ["def " + block.removeprefix("def ")]
}

# What each helper needs besides itself: other helpers, modules, type variables.
HELPER_NEEDS = {
    "_text_array": ("_pg_array", "_not_null"),
    "_text_array_or_none": ("_pg_array",),
    "_hstore_text": ("_hstore_value",),
}

# Type aliases the models module defines when some annotation uses them.
ALIASES = {
    "JSONValue": "",  # spelled by the models module, which knows its mode
    "Inet": (
        "Inet: TypeAlias = (\n"
        "    ipaddress.IPv4Address\n"
        "    | ipaddress.IPv6Address\n"
        "    | ipaddress.IPv4Interface\n"
        "    | ipaddress.IPv6Interface\n"
        ")"
    ),
}


_INT = PyType("int")
_STR = PyType("str")
_FLOAT = PyType("float")
_BYTES = PyType("bytes")
_SQLITE_BOOL = PyType("bool", decode="bool({})", decode_nullable="_bool_or_none({})")
_SQLITE_DECIMAL = PyType(
    "decimal.Decimal",
    decode="_decimal({})",
    encode="str({})",
    decode_nullable="_or_none(_decimal, {})",
    encode_nullable="_decimal_text({})",
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
    "time": _STR,
    "uuid": _STR,
    "real": _FLOAT,
    "double": _FLOAT,
    "double precision": _FLOAT,
    "float": _FLOAT,
    "blob": _BYTES,
    "boolean": _SQLITE_BOOL,
    "bool": _SQLITE_BOOL,
    "numeric": _SQLITE_DECIMAL,
    "decimal": _SQLITE_DECIMAL,
}

_JSON = PyType(
    "JSONValue",
    encode="psycopg.types.json.Jsonb({})",
    encode_nullable="_jsonb_or_none({})",
    aliases=("JSONValue",),
)
_HSTORE = PyType(
    "dict[str, str | None]",
    decode="_hstore({})",
    encode="_hstore_text({})",
    decode_nullable="_or_none(_hstore, {})",
    encode_nullable="_or_none(_hstore_text, {})",
)


def _range(element: str) -> PyType:
    return PyType(f"psycopg.types.range.Range[{element}]")


def _multirange(element: str) -> PyType:
    return PyType(f"psycopg.types.multirange.Multirange[{element}]")


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
    "numeric": PyType("decimal.Decimal"),
    "decimal": PyType("decimal.Decimal"),
    "bytea": _BYTES,
    "uuid": PyType("uuid.UUID"),
    "json": _JSON,
    "jsonb": _JSON,
    "timestamp": PyType("datetime.datetime"),
    "timestamp without time zone": PyType("datetime.datetime"),
    "timestamptz": PyType("datetime.datetime"),
    "timestamp with time zone": PyType("datetime.datetime"),
    "date": PyType("datetime.date"),
    "time": PyType("datetime.time"),
    "timetz": PyType("datetime.time"),
    "interval": PyType("datetime.timedelta"),
    "inet": PyType("models.Inet", aliases=("Inet",)),
    "cidr": PyType("ipaddress.IPv4Network | ipaddress.IPv6Network"),
    "int4range": _range("int"),
    "int8range": _range("int"),
    "numrange": _range("decimal.Decimal"),
    "daterange": _range("datetime.date"),
    "tsrange": _range("datetime.datetime"),
    "tstzrange": _range("datetime.datetime"),
    "int4multirange": _multirange("int"),
    "int8multirange": _multirange("int"),
    "nummultirange": _multirange("decimal.Decimal"),
    "datemultirange": _multirange("datetime.date"),
    "tsmultirange": _multirange("datetime.datetime"),
    "tstzmultirange": _multirange("datetime.datetime"),
    "hstore": _HSTORE,
    # psycopg parses a record into a tuple of its fields' text forms.
    "record": PyType("tuple[str | None, ...]"),
    # A function that returns nothing: psycopg returns an empty string.
    "void": _STR,
}
# Types psycopg has no loader for: it returns their text form, a str, and
# lists of them for their arrays; a str parameter goes as an untyped literal
# that the server casts to the column's type.
_POSTGRES.update(
    dict.fromkeys(
        [
            "money",
            "xml",
            "tsvector",
            "tsquery",
            "macaddr",
            "macaddr8",
            "bit",
            "varbit",
            "bit varying",
            "point",
            "line",
            "lseg",
            "box",
            "path",
            "polygon",
            "circle",
            "jsonpath",
            "pg_lsn",
            "regclass",
            "regtype",
            "regproc",
            "regprocedure",
            "regnamespace",
            "regrole",
            "regconfig",
            "xid",
            "xid8",
            "cid",
            "tid",
            "aclitem",
            "int2vector",
            "oidvector",
            "ltree",
            "lquery",
            "ltxtquery",
        ],
        _STR,
    )
)

# Types of extensions that psycopg returns as text, and their arrays too.
_EXTENSION_TEXT = frozenset({"citext", "ltree", "lquery", "ltxtquery"})

# Element types whose arrays need a conversion of their own.
_JSON_ARRAY = PyType(
    "JSONValue",
    encode="_jsonb_list({})",
    encode_nullable="_jsonb_list({})",
    aliases=("JSONValue",),
)


def _sqlite_name(name: str) -> str:
    # Drop a length or precision, as in VARCHAR(255) or DECIMAL(10, 5), the
    # quotes of a quoted name, and every space.
    name = re.sub(r"\(.*\)\s*$", "", name)
    return re.sub(r'[\s"`]+', "", name).lower()


_SQLITE = {_sqlite_name(name): py for name, py in _SQLITE_SPELLINGS.items()}


def _sqlite_affinity(name: str) -> PyType | None:
    """Returns the type of a spelling not listed, by SQLite's rules of affinity.

    A name holding INT has INTEGER affinity; CHAR, CLOB or TEXT, TEXT; BLOB,
    BLOB; REAL, FLOA or DOUB, REAL (checked in that order, as SQLite does).
    Anything else has NUMERIC affinity, whose values may be integers, floats
    or text: no one type, so None.
    """
    upper = name.upper()
    if "INT" in upper:
        return _INT
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return _STR
    if "BLOB" in upper:
        return _BYTES
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return _FLOAT
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Override:
    """One entry of the overrides option: a db_type or a column mapped to a Python type.

    ``column`` is ``table.column`` or ``schema.table.column``; a db_type
    override applies to NOT NULL columns only unless ``nullable`` is set, as
    in sqlc's own overrides. ``annotation`` is the type as the code spells it,
    ``module`` the module to import for it (empty for a builtin).
    """

    db_type: str
    column: str
    annotation: str
    module: str
    nullable: bool


def _normal(engine: str, name: str) -> str:
    if engine == "sqlite":
        return _sqlite_name(name)
    return name.lower().removeprefix("pg_catalog.")


@dataclasses.dataclass(frozen=True, slots=True)
class TypeMap:
    """The types of one request: its engine, its enum classes and the overrides.

    ``enums`` maps (schema, name) of each enum, the default schema as "", to
    its class name in the models module; ``composites`` likewise names the
    composite types, which psycopg returns in their text form, a str, until
    they are registered.
    """

    engine: str
    default_schema: str
    enums: dict[tuple[str, str], str]
    overrides: tuple[Override, ...]
    composites: frozenset[tuple[str, str]] = frozenset()

    def _schema(self, schema: str) -> str:
        return "" if schema in (self.default_schema, "public", "main") else schema

    def _override(self, column: Column, owner: str) -> PyType | None:
        type_name = _normal(self.engine, column.type_name)
        table = self._schema(column.table_schema) + "." + (owner or column.table)
        name = column.original_name or column.name
        for override in self.overrides:
            if override.column:
                # table.column matches the table in any schema.
                target = f"{table}.{name}".lower()
                if override.column.count(".") == 1:
                    target = target.split(".", 1)[1]
                if override.column.lower() != target:
                    continue
            elif override.db_type != type_name or (not column.not_null and not override.nullable):
                continue
            return PyType(override.annotation)
        return None

    def _qualified(self, column: Column) -> tuple[str, str]:
        name = column.type_name.lower()
        schema = self._schema(column.type_schema)
        if "." in name and not schema:
            schema, name = name.split(".", 1)
            schema = self._schema(schema)
        return schema, name

    def _enum(self, column: Column) -> str | None:
        return self.enums.get(self._qualified(column))

    def _composite(self, column: Column) -> bool:
        schema, name = self._qualified(column)
        return (schema, name) in {(s, n.lower()) for s, n in self.composites}

    def _text_array(self, column: Column, element: str, dims: int, where: str) -> PyType:
        """Returns the type of an array that psycopg may return in its text form."""
        if dims > 1 or "[" in element:
            raise RequestError(
                f"{where}: column {column.name!r}: arrays of {column.type_name} "
                f"as {element} are not supported: only one-dimensional arrays of a "
                "type that takes a str"
            )
        if column.not_null:
            return PyType(f"list[{element}]", decode=f"_text_array({element}, {{}})")
        return PyType(
            f"list[{element} | None] | None", decode=f"_text_array_or_none({element}, {{}})"
        )

    def python_type(self, column: Column, where: str, owner: str = "") -> PyType:
        """Returns the Python type of column, None allowed when it is nullable.

        owner names the table of a table column. Raises RequestError naming
        where (the query or table), the column and the type when the type has
        no exact Python type.
        """
        dims = max(column.array_dims, 1 if column.is_array else 0)
        override = self._override(column, owner)
        if override is not None:
            return self._overridden(column, override, dims, where)
        if self.engine == "sqlite":
            base = _sqlite_base(column, dims, where, owner)
            if base is None:
                raise _untyped(column, self.engine, where)
            return _finish(base, column, dims, where)
        if self.engine == "postgresql":
            return self._postgres(column, dims, where)
        raise RequestError(f"engine {self.engine!r} is not supported: want sqlite or postgresql")

    def _overridden(self, column: Column, base: PyType, dims: int, where: str) -> PyType:
        text_form = self._enum(column) or self._composite(column)
        if dims and (text_form or _normal(self.engine, column.type_name) in _EXTENSION_TEXT):
            # psycopg returns these arrays in their text form until the type
            # is registered: the override's type gets each element.
            return self._text_array(column, base.annotation, dims, where)
        return _finish(base, column, dims, where)

    def _postgres(self, column: Column, dims: int, where: str) -> PyType:
        enum = self._enum(column)
        if enum is not None:
            if dims:
                return self._text_array(column, f"models.{enum}", dims, where)
            member = PyType(
                f"models.{enum}",
                decode=f"models.{enum}({{}})",
                decode_nullable=f"_or_none(models.{enum}, {{}})",
            )
            return _finish(member, column, dims, where)
        if self._composite(column):
            if dims:
                return self._text_array(column, "str", dims, where)
            return _finish(_STR, column, dims, where)
        name = _normal(self.engine, column.type_name)
        if name in _EXTENSION_TEXT and dims:
            # psycopg knows no array type of an extension's type: it returns
            # the array's text form.
            return self._text_array(column, "str", dims, where)
        base = _POSTGRES.get(name)
        if base is None:
            raise _untyped(column, self.engine, where)
        if base is _JSON and dims == 1:
            inner = "JSONValue" if column.not_null else "JSONValue | None"
            listed = f"list[{inner}]" + ("" if column.not_null else " | None")
            return dataclasses.replace(_JSON_ARRAY, annotation=listed)
        return _finish(base, column, dims, where)


def _sqlite_base(column: Column, dims: int, where: str, owner: str) -> PyType | None:
    """Returns the type of a SQLite column by its declared type, None when it has none."""
    untyped = column.type_name.lower() == "any"
    base = _SQLITE.get(_sqlite_name(column.type_name))
    if base is None and not untyped:
        base = _sqlite_affinity(column.type_name)
    if dims:
        raise RequestError(f"{where}: column {column.name!r}: SQLite has no arrays")
    if base is None and untyped and owner:
        raise RequestError(
            f"{where}: column {column.name!r} is declared without a type, so "
            "SQLite stores values of any type in it: declare one, or map it "
            "with an override by column"
        )
    if base is None and untyped:
        raise RequestError(
            f"{where}: column {column.name!r}: sqlc infers no type for this "
            "expression (SQLite's max(), min(), ifnull(), datetime() and the like "
            "return any type): CAST it, as in CAST(max(x) AS INTEGER) AS x, or map "
            "sqlc's type any with an override (db_type: any, py_type: ..., "
            "nullable: true)"
        )
    return base


def _untyped(column: Column, engine: str, where: str) -> RequestError:
    """Returns the error that says why column has no Python type and how to give it one."""
    if column.type_name.lower() == "any":
        return RequestError(
            f"{where}: column {column.name!r}: sqlc infers no type for this "
            "expression: CAST it, as in CAST(x || y AS text) AS x, or map sqlc's "
            "type any with an override (db_type: any, py_type: ..., nullable: true)"
        )
    if not column.type_name and column.embed_table:
        return RequestError(f"{where}: column {column.name!r}: sqlc.embed is not supported here")
    if not column.type_name:
        return RequestError(
            f"{where}: column {column.name!r}: sqlc infers no type for it: "
            "CAST it in the SQL, or map it with an override"
        )
    return RequestError(
        f"{where}: column {column.name!r}: type {column.type_name!r} "
        f"has no exact Python type for {engine}: map it with an override "
        "(db_type or column) to a Python type"
    )


def _finish(base: PyType, column: Column, dims: int, where: str) -> PyType:
    """Returns base as column's type: a list per array dimension, then None if nullable.

    Raises RequestError when an array's elements would need a conversion.
    """
    if dims and (base.encode != "{}" or base.decode != "{}"):
        raise RequestError(
            f"{where}: column {column.name!r}: type {column.type_name!r}: "
            f"arrays of {column.type_name} are not supported: map the column "
            "with an override"
        )
    result = base
    for _ in range(dims):
        inner = result.annotation
        if not column.not_null:
            # PostgreSQL cannot declare array elements NOT NULL: a nullable
            # array column is taken to hold nullable elements, a NOT NULL one
            # (whose elements a CHECK can keep from NULL) not.
            inner = f"{inner} | None"
        result = PyType(f"list[{inner}]", aliases=result.aliases)
    if column.not_null:
        return result
    return PyType(
        f"{result.annotation} | None",
        decode=result.decode_nullable,
        encode=result.encode_nullable,
        aliases=result.aliases,
    )
