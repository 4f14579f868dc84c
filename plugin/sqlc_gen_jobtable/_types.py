"""Maps each engine's declared column types to exact Python types.

Annotations that name a model (an enum class, a type alias) spell it
``models.Name``; the models module itself drops the prefix.
"""

import dataclasses

from ._asyncpg_types import asyncpg_base, asyncpg_refusal
from ._mysql_types import mysql_base
from ._pytype import BYTES, FLOAT, INT, STR, PyType
from ._request import Column, RequestError, UntypedError
from ._sqlite_types import sqlite_base, sqlite_name
from ._untyped import POLYMORPHIC, untyped_error, untyped_note

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
    "smallint": INT,
    "int2": INT,
    "integer": INT,
    "int": INT,
    "int4": INT,
    "bigint": INT,
    "int8": INT,
    "serial": INT,
    "serial4": INT,
    "smallserial": INT,
    "serial2": INT,
    "bigserial": INT,
    "serial8": INT,
    "oid": INT,
    "text": STR,
    "varchar": STR,
    "character varying": STR,
    "char": STR,
    "character": STR,
    "bpchar": STR,
    "citext": STR,
    "name": STR,
    "bool": PyType("bool"),
    "boolean": PyType("bool"),
    "real": FLOAT,
    "float4": FLOAT,
    "float8": FLOAT,
    "double precision": FLOAT,
    "numeric": PyType("decimal.Decimal"),
    "decimal": PyType("decimal.Decimal"),
    "bytea": BYTES,
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
    "void": STR,
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
        STR,
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
        return sqlite_name(name)
    return name.lower().removeprefix("pg_catalog.")


@dataclasses.dataclass(frozen=True, slots=True)
class TypeMap:
    """The types of one request: its engine, its enum classes and the overrides.

    ``enums`` maps (schema, name) of each enum, the default schema as "", to
    its class name in the models module; ``composites`` likewise names the
    composite types, which psycopg returns in their text form, a str, until
    they are registered. ``driver`` is the option's: with ``asyncpg``,
    PostgreSQL's types map to what asyncpg decodes them to. ``sets`` names
    the enums of sqlc's MySQL catalog that are SET columns, each a
    ``frozenset[str]`` rather than a member of an enum class.
    """

    engine: str
    default_schema: str
    enums: dict[tuple[str, str], str]
    overrides: tuple[Override, ...]
    composites: frozenset[tuple[str, str]] = frozenset()
    untyped: str = "object"
    driver: str = ""
    sets: frozenset[str] = frozenset()
    warnings: list[str] = dataclasses.field(default_factory=list)

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

    def python_type(
        self, column: Column, where: str, owner: str = "", expression: str = ""
    ) -> PyType:
        """Returns the Python type of column, None allowed when it is nullable.

        owner names the table of a table column, expression the SQL of a
        result column when it is known. A value sqlc infers no type for is
        ``object``, with a note and a warning, or with the untyped option
        ``refuse`` a RequestError; so is a type with no exact Python type
        (naming where, the query or table, the column and the type).
        """
        try:
            return self._python_type(column, where, owner)
        except UntypedError:
            if self.untyped == "refuse":
                raise
            note = untyped_note(column, self.engine, expression, owner)
            self.warnings.append(f"{where}: column {column.name!r} is typed object: {note}")
            return PyType("object", note=note)

    def _python_type(self, column: Column, where: str, owner: str) -> PyType:
        dims = max(column.array_dims, 1 if column.is_array else 0)
        override = self._override(column, owner)
        if override is not None:
            return self._overridden(column, override, dims, where)
        if self.engine == "sqlite":
            base = sqlite_base(column, dims, where, owner)
            if base is None:
                raise untyped_error(column, self.engine, where)
            return _finish(base, column, dims, where)
        if self.engine == "postgresql":
            return self._postgres(column, dims, where)
        if self.engine == "mysql":
            base = mysql_base(column, self.enums, self.sets)
            if base is None and column.type_name.lower() not in ("", "any"):
                # A spatial type, say: PyMySQL returns what the server sends.
                raise UntypedError(
                    f"{where}: column {column.name!r}: type {column.type_name!r} has no "
                    "exact Python type on MySQL: map it with an override (db_type or column)"
                )
            if base is None:
                raise untyped_error(column, self.engine, where)
            return _finish(base, column, dims, where)
        raise RequestError(
            f"engine {self.engine!r} is not supported: want sqlite, postgresql or mysql"
        )

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
            if self.driver == "asyncpg":
                raise asyncpg_refusal(column, where, f"composite type {column.type_name!r}")
            if dims:
                return self._text_array(column, "str", dims, where)
            return _finish(STR, column, dims, where)
        name = _normal(self.engine, column.type_name)
        if self.driver == "asyncpg":
            base = asyncpg_base(column, name, where, _POSTGRES)
        elif name in _EXTENSION_TEXT and dims:
            # psycopg knows no array type of an extension's type: it returns
            # the array's text form.
            return self._text_array(column, "str", dims, where)
        else:
            base = _POSTGRES.get(name)
        if base is None and name in POLYMORPHIC:
            raise UntypedError(
                f"{where}: column {column.name!r}: sqlc types it {name}, a pseudo-type "
                "of no one type: CAST it in the SQL, or map it with an override"
            )
        if base is None:
            raise untyped_error(column, self.engine, where)
        if base is _JSON and dims == 1:
            inner = "JSONValue" if column.not_null else "JSONValue | None"
            listed = f"list[{inner}]" + ("" if column.not_null else " | None")
            return dataclasses.replace(_JSON_ARRAY, annotation=listed)
        return _finish(base, column, dims, where)


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
