"""The request's tables and enums as Python names and typed fields.

Everything here is shared by the models module and the query modules: the
class name of each table and enum (checked for clashes), the field name of
each column, and each column's Python type. ``Catalog.aliases`` collects the
type aliases the fields use, which the models module then defines.
"""

import dataclasses

from . import _naming as naming
from ._expressions import column_expressions, extreme_source, may_be_null, sqlite_rounding_is_real
from ._options import Options
from ._pytype import PyType
from ._request import Column, Parameter, Query, Request, RequestError, Table
from ._types import TypeMap
from ._untyped import UNTYPED_NAMES

# Class names the generated code defines itself, which no table or enum may take.
_RESERVED = ("JSONValue", "JSONScalar", "Inet", "ExecResult")
# Attributes of pydantic.BaseModel that a field must not replace.
_PYDANTIC_TAKEN = frozenset(
    {
        "construct",
        "copy",
        "dict",
        "fields",
        "from_orm",
        "json",
        "parse_file",
        "parse_obj",
        "parse_raw",
        "schema",
        "schema_json",
        "update_forward_refs",
        "validate",
    }
)


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """A field of a generated class, or a parameter of a generated method.

    ``embed`` is set on a field that holds an embedded model: its class, and
    ``embed_fields`` the fields of its columns. ``alias`` is the SQL name,
    which pydantic needs as the alias of a field it makes rename.
    """

    name: str
    type: PyType
    embed: str = ""
    embed_fields: tuple["Field", ...] = ()
    alias: str = ""


def renamed_by_pydantic(field: Field) -> bool:
    """Tells whether field would replace an attribute of pydantic.BaseModel."""
    return field.name in _PYDANTIC_TAKEN or field.name.startswith("model_")


def attr(field: Field, models: str) -> str:
    """Returns the attribute name of field in a class of the models mode."""
    if models == "pydantic" and renamed_by_pydantic(field):
        return field.name + "_"
    return field.name


class Names:
    """The Python names of the request's tables and enums, checked for clashes.

    Raises RequestError when two of them make one class name, or one takes a
    name the generated code defines itself.
    """

    def __init__(self, request: Request, options: Options) -> None:
        self.options = options
        self.tables: dict[tuple[str, str], str] = {}
        self.enums: dict[tuple[str, str], str] = {}
        self._owners: dict[str, str] = {}
        for enum in request.enums:
            qualified = f"{enum.schema}.{enum.name}" if enum.schema else enum.name
            name = self._rename(qualified) or naming.pascal(
                f"{enum.schema}_{enum.name}" if enum.schema else enum.name
            )
            self._claim(name, f"enum {qualified}")
            self.enums[(enum.schema, enum.name.lower())] = name
        for table in request.tables:
            qualified = f"{table.schema}.{table.name}" if table.schema else table.name
            base = table.name if options.emit_exact_table_names else naming.singular(table.name)
            name = self._rename(qualified) or naming.pascal(
                f"{table.schema}_{base}" if table.schema else base
            )
            self._claim(name, f"table {qualified}")
            self.tables[(table.schema, table.name)] = name
        for reserved in _RESERVED:
            if reserved in self._owners:
                raise RequestError(
                    f"{self._owners[reserved]} makes the class {reserved}, a name the generated "
                    "code uses: give it another name with the rename option"
                )

    def _claim(self, name: str, owner: str) -> None:
        if name in self._owners:
            raise RequestError(
                f"{owner} and {self._owners[name]} both make the class {name}: "
                "give one another name with the rename option"
            )
        self._owners[name] = owner

    def _rename(self, qualified: str) -> str:
        return self.options.rename.get(qualified, "")

    def field(self, column: Column, owner: str = "") -> str:
        """Returns the Python name of a column or parameter: renamed by table.column."""
        table = owner or column.table
        name = column.original_name or column.name
        keys = [f"{table}.{name}"]
        if column.table_schema:
            keys.insert(0, f"{column.table_schema}.{table}.{name}")
        for key in keys:
            if table and key in self.options.rename and column.name == name:
                return self.options.rename[key]
        return naming.identifier(column.name)


class Catalog:
    """The tables, names and types of one request, and the type aliases its fields use."""

    def __init__(self, request: Request, options: Options) -> None:
        self.request = request
        self.options = options
        self.names = Names(request, options)
        self.types = TypeMap(
            engine=request.engine,
            default_schema=request.default_schema,
            enums=self.names.enums,
            overrides=options.overrides,
            composites=frozenset(request.composites),
            untyped=options.untyped,
            driver=options.driver,
            sets=frozenset(request.sets),
        )
        names = [t.name for t in request.tables]
        self._by_name = {t.name: t for t in request.tables if names.count(t.name) == 1}
        self.override_modules = tuple(sorted({o.module for o in options.overrides if o.module}))
        self.aliases: set[str] = set()

    def table(self, schema: str, name: str) -> Table | None:
        """Returns the table of schema and name (the default schema in any spelling)."""
        schema = "" if schema in (self.request.default_schema, "public", "main") else schema
        for table in self.request.tables:
            if table.schema == schema and table.name == name:
                return table
        return None

    def fields(
        self,
        columns: tuple[Column, ...],
        where: str,
        owner: str = "",
        outer: bool = False,
        query: Query | None = None,
    ) -> list[Field]:
        """Returns the fields of columns; a repeated name gets _2, _3 as sqlc-gen-go does.

        outer tells that the query has an outer join, so an embedded table may
        be missing from a row: its field is then optional. query, when columns
        are its results, lets an untyped column be typed by its expression.
        """
        fields: list[Field] = []
        seen: set[str] = set()
        expressions = column_expressions(query) if query else [""] * len(columns)
        for column, expression in zip(columns, expressions, strict=True):
            if query is not None and column.not_null and may_be_null(expression, query):
                column = dataclasses.replace(column, not_null=False)
            if column.embed_table:
                field = self._embedded(column, where, outer)
            else:
                py = self._column_type(column, where, owner, expression, query)
                field = Field(self.names.field(column, owner), py, alias=column.name)
            base, n = field.name, 2
            while field.name in seen:
                field = dataclasses.replace(field, name=f"{base}_{n}")
                n += 1
            seen.add(field.name)
            self.aliases.update(field.type.aliases)
            fields.append(field)
        return fields

    def _column_type(
        self, column: Column, where: str, owner: str, expression: str, query: Query | None
    ) -> PyType:
        """Returns column's type; max(col) and min(col) untyped by sqlc get col's, nullable."""
        type_name = column.type_name.lower()
        overridden = any(o.db_type == type_name for o in self.options.overrides)
        if (
            query is not None
            and self.request.engine == "sqlite"
            and not overridden
            and sqlite_rounding_is_real(expression, query, self._by_name)
        ):
            # sqlc says INTEGER; SQLite returns a REAL for a REAL.
            column = dataclasses.replace(column, type_name="REAL")
        if query is not None and type_name in UNTYPED_NAMES and not overridden:
            source = extreme_source(expression, query, self._by_name)
            if source is not None:
                # An aggregate over no rows is NULL, whatever the column.
                read = dataclasses.replace(
                    source.column,
                    not_null=False,
                    name=column.name,
                    original_name=source.column.name,
                )
                return self.types.python_type(read, where, source.table.name, expression)
        return self.types.python_type(column, where, owner, expression)

    def _embedded(self, column: Column, where: str, outer: bool) -> Field:
        table = self.table(column.embed_schema, column.embed_table)
        if table is None:
            raise RequestError(
                f"{where}: sqlc.embed({column.embed_table}): no such table in the schema"
            )
        cls = self.names.tables[(table.schema, table.name)]
        inner = self.fields(table.columns, f"table {table.name}", owner=table.name)
        name = naming.identifier(naming.snake(cls))
        annotation = f"models.{cls}" + (" | None" if outer else "")
        return Field(name, PyType(annotation), cls, tuple(inner))

    def params(self, params: tuple[Parameter, ...], where: str) -> list[tuple[int, Field]]:
        """Returns each parameter's number and field, in the order of the numbers.

        A parameter without a name is called p1, p2, ...; a sqlc.slice takes a
        list whose values are each converted as a single parameter would be.
        """
        out: list[tuple[int, Field]] = []
        seen: set[str] = set()
        for param in sorted(params, key=lambda p: p.number):
            column = param.column
            name = self.names.field(column) if column.name else f"p{param.number}"
            while name in seen:
                name = f"{name}_{param.number}"
            seen.add(name)
            py = self.types.python_type(
                column, f"{where}: parameter", expression=f"parameter {name}"
            )
            if column.is_sqlc_slice:
                encode = "{}"
                if py.encode != "{}":
                    encode = "[" + py.encode.replace("{}", "v") + " for v in {}]"
                py = PyType(f"list[{py.annotation}]", encode=encode, aliases=py.aliases)
            self.aliases.update(py.aliases)
            out.append((param.number, Field(name, py)))
        return out
