"""The parts of sqlc's generate request that the plugin reads, as typed data.

sqlc sends the request as protobuf JSON (plugin/codegen.proto): field names in
snake_case, bytes as base64, absent messages as null.
"""

import base64
import dataclasses
import json
from typing import TypeAlias, cast


class RequestError(Exception):
    """The request is not one this plugin can answer; the message says why."""


class UntypedError(RequestError):
    """sqlc infers no type for a value: the plugin types it object unless told to refuse."""


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """A table column, a query's result column, or a parameter's column."""

    name: str
    type_name: str
    type_schema: str
    not_null: bool
    is_array: bool
    array_dims: int
    table: str
    is_sqlc_slice: bool
    is_named_param: bool
    table_schema: str = ""
    embed_table: str = ""
    embed_schema: str = ""
    original_name: str = ""
    # The declared length (VARCHAR(100): 100), -1 when none; MySQL only.
    length: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """A table of the catalog, with its columns in declaration order."""

    name: str
    comment: str
    columns: tuple[Column, ...]
    schema: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Enum:
    """An enum type of the catalog: its values in declaration order."""

    name: str
    schema: str
    values: tuple[str, ...]
    comment: str


@dataclasses.dataclass(frozen=True, slots=True)
class Parameter:
    """A query parameter: its position in the SQL and the column it binds."""

    number: int
    column: Column


@dataclasses.dataclass(frozen=True, slots=True)
class Query:
    """One named query of a query file."""

    name: str
    cmd: str
    text: str
    filename: str
    comments: tuple[str, ...]
    columns: tuple[Column, ...]
    params: tuple[Parameter, ...]
    insert_table: str = ""
    insert_schema: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """A whole generate request.

    ``schema_paths`` and ``query_paths`` are as sqlc.yaml names them, relative
    to its directory, where sqlc runs the plugin.
    """

    engine: str
    schema_paths: tuple[str, ...]
    sqlc_version: str
    options: dict[str, "JSON"]
    tables: tuple[Table, ...]
    queries: tuple[Query, ...]
    enums: tuple[Enum, ...] = ()
    default_schema: str = ""
    composites: tuple[tuple[str, str], ...] = ()
    query_paths: tuple[str, ...] = ()
    # MySQL: the enums of the catalog that are SET columns, not ENUM ones.
    sets: tuple[str, ...] = ()


JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None


def _object(value: JSON, where: str) -> dict[str, JSON]:
    if not isinstance(value, dict):
        raise RequestError(f"{where}: want an object, got {type(value).__name__}")
    return value


def _list(value: JSON, where: str) -> list[JSON]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RequestError(f"{where}: want a list, got {type(value).__name__}")
    return value


def _str(value: JSON, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{where}: want a string, got {type(value).__name__}")
    return value


def _int(value: JSON, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise RequestError(f"{where}: want an integer, got {type(value).__name__}")
    return int(value)


def _bool(value: JSON) -> bool:
    return value is True


def _identifier(value: JSON, where: str) -> tuple[str, str]:
    """Returns the (schema, name) of an identifier message, ("", "") when absent."""
    if not value:
        return "", ""
    obj = _object(value, where)
    return _str(obj.get("schema"), where + ".schema"), _str(obj.get("name"), where + ".name")


def _column(value: JSON, where: str) -> Column:
    obj = _object(value, where)
    type_ = _object(obj.get("type") or {}, where + ".type")
    table = obj.get("table")
    table_schema, _ = _identifier(table, where + ".table")
    embed_schema, embed_table = _identifier(obj.get("embed_table"), where + ".embed_table")
    return Column(
        name=_str(obj.get("name"), where + ".name"),
        type_name=_str(type_.get("name"), where + ".type.name"),
        type_schema=_str(type_.get("schema"), where + ".type.schema"),
        not_null=_bool(obj.get("not_null")),
        is_array=_bool(obj.get("is_array")),
        array_dims=_int(obj.get("array_dims"), where + ".array_dims"),
        table=_str(_object(table, where + ".table").get("name"), where) if table else "",
        is_sqlc_slice=_bool(obj.get("is_sqlc_slice")),
        is_named_param=_bool(obj.get("is_named_param")),
        table_schema=table_schema,
        embed_table=embed_table,
        embed_schema=embed_schema,
        original_name=_str(obj.get("original_name"), where + ".original_name"),
        length=_int(obj.get("length", -1), where + ".length"),
    )


def _options(raw: str) -> dict[str, JSON]:
    if not raw:
        return {}
    try:
        decoded = cast(JSON, json.loads(base64.b64decode(raw)))
    except ValueError as err:
        raise RequestError(f"plugin options: not base64 JSON: {err}") from None
    if not isinstance(decoded, dict):
        raise RequestError("plugin options: want a mapping")
    return decoded


def _enum(value: JSON, schema: str, where: str) -> Enum:
    enum = _object(value, where)
    return Enum(
        name=_str(enum.get("name"), where + ".name"),
        schema=schema,
        values=tuple(_str(v, where + ".vals") for v in _list(enum.get("vals"), where + ".vals")),
        comment=_str(enum.get("comment"), where + ".comment"),
    )


def _table(value: JSON, schema: str, where: str) -> Table:
    table = _object(value, where)
    rel = _object(table.get("rel") or {}, where + ".rel")
    columns = _list(table.get("columns"), where + ".columns")
    return Table(
        name=_str(rel.get("name"), where + ".rel.name"),
        comment=_str(table.get("comment"), where + ".comment"),
        columns=tuple(_column(c, f"{where}.columns[{k}]") for k, c in enumerate(columns)),
        schema=schema,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Catalog:
    """The user-defined parts of sqlc's catalog: tables, enums and composite types."""

    default_schema: str
    tables: tuple[Table, ...]
    enums: tuple[Enum, ...]
    composites: tuple[tuple[str, str], ...]


def _catalog(value: JSON) -> _Catalog:
    """Returns the catalog's own schemas' contents; PostgreSQL's system schemas are left out."""
    catalog = _object(value or {}, "catalog")
    default_schema = _str(catalog.get("default_schema"), "catalog.default_schema")
    tables: list[Table] = []
    enums: list[Enum] = []
    composites: list[tuple[str, str]] = []
    for i, schema_value in enumerate(_list(catalog.get("schemas"), "catalog.schemas")):
        schema = _object(schema_value, f"catalog.schemas[{i}]")
        name = _str(schema.get("name"), "schema.name")
        if name in ("pg_catalog", "information_schema"):
            continue
        # Names in the default schema go unqualified, as sqlc writes them.
        schema_name = "" if name == default_schema else name
        where = f"catalog.schemas[{i}]"
        for j, composite in enumerate(_list(schema.get("composite_types"), f"{name}.types")):
            at = f"{where}.composite_types[{j}]"
            composites.append((schema_name, _str(_object(composite, at).get("name"), at)))
        for j, enum in enumerate(_list(schema.get("enums"), f"{name}.enums")):
            enums.append(_enum(enum, schema_name, f"{where}.enums[{j}]"))
        for j, table in enumerate(_list(schema.get("tables"), f"{name}.tables")):
            tables.append(_table(table, schema_name, f"{where}.tables[{j}]"))
    return _Catalog(default_schema, tuple(tables), tuple(enums), tuple(composites))


def _query(value: JSON, where: str) -> Query:
    query = _object(value, where)
    params: list[Parameter] = []
    for k, param_value in enumerate(_list(query.get("params"), where + ".params")):
        param = _object(param_value, f"{where}.params[{k}]")
        params.append(
            Parameter(
                number=_int(param.get("number"), f"{where}.params[{k}].number"),
                column=_column(param.get("column"), f"{where}.params[{k}].column"),
            )
        )
    insert_schema, insert_table = _identifier(
        query.get("insert_into_table"), where + ".insert_into_table"
    )
    comments = _list(query.get("comments"), where + ".comments")
    columns = _list(query.get("columns"), where + ".columns")
    return Query(
        name=_str(query.get("name"), where + ".name"),
        cmd=_str(query.get("cmd"), where + ".cmd"),
        text=_str(query.get("text"), where + ".text"),
        filename=_str(query.get("filename"), where + ".filename"),
        comments=tuple(_str(c, where + ".comments") for c in comments),
        columns=tuple(_column(c, f"{where}.columns[{k}]") for k, c in enumerate(columns)),
        params=tuple(params),
        insert_table=insert_table,
        insert_schema=insert_schema,
    )


def parse(data: bytes) -> Request:
    """Returns the request sqlc sent, or raises RequestError naming the field it cannot read."""
    if not data.lstrip().startswith(b"{"):
        # Without format: json, sqlc sends (and wants back) protobuf.
        raise RequestError(
            "sqlc sent its request as protobuf: set format: json under the plugin's "
            "process in sqlc.yaml (plugins: - name: ... process: cmd: sqlc-gen-jobtable, "
            "format: json)"
        )
    try:
        root = cast(JSON, json.loads(data))
    except ValueError as err:
        raise RequestError(f"request: not JSON: {err}") from None
    obj = _object(root, "request")
    settings = _object(obj.get("settings") or {}, "settings")
    catalog = _catalog(obj.get("catalog"))
    queries = _list(obj.get("queries"), "queries")
    schema_paths = _list(settings.get("schema"), "settings.schema")
    return Request(
        engine=_str(settings.get("engine"), "settings.engine"),
        schema_paths=tuple(_str(p, "settings.schema") for p in schema_paths),
        sqlc_version=_str(obj.get("sqlc_version"), "sqlc_version"),
        options=_options(_str(obj.get("plugin_options"), "plugin_options")),
        tables=catalog.tables,
        queries=tuple(_query(q, f"queries[{i}]") for i, q in enumerate(queries)),
        enums=catalog.enums,
        default_schema=catalog.default_schema,
        composites=catalog.composites,
        query_paths=tuple(
            _str(p, "settings.queries") for p in _list(settings.get("queries"), "settings.queries")
        ),
    )
