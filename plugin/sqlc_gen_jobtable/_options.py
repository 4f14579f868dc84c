"""The plugin options of one codegen entry in sqlc.yaml, checked."""

import dataclasses
import keyword
import re

from ._request import JSON, Request, RequestError
from ._types import Override

_DRIVERS = {
    "sqlite": ("sqlite3",),
    "postgresql": ("psycopg", "asyncpg"),
    "mysql": ("pymysql",),
}
_PY_TYPE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\[.*\])?")


def _flag(options: dict[str, JSON], name: str, default: bool = False) -> bool:
    value = options.pop(name, default)
    if value in (True, "true"):
        return True
    if value in (False, "false"):
        return False
    raise RequestError(f"option {name}: {value!r}: want true or false")


def _override(index: int, value: JSON) -> Override:
    where = f"option overrides[{index}]"
    if not isinstance(value, dict):
        raise RequestError(f"{where}: want a mapping with db_type or column, and py_type")
    entry = dict(value)
    db_type = entry.pop("db_type", "")
    column = entry.pop("column", "")
    py_type = entry.pop("py_type", "")
    nullable = entry.pop("nullable", False)
    if entry:
        raise RequestError(f"{where}: unknown keys: {', '.join(sorted(entry))}")
    if not isinstance(db_type, str) or not isinstance(column, str) or bool(db_type) == bool(column):
        raise RequestError(f"{where}: want exactly one of db_type and column, each a string")
    if column and column.count(".") not in (1, 2):
        raise RequestError(f"{where}: column {column!r}: want table.column or schema.table.column")
    if not isinstance(py_type, str) or not _PY_TYPE.fullmatch(py_type):
        raise RequestError(
            f"{where}: py_type {py_type!r}: want a type by import path, as in "
            "ipaddress.IPv4Address or myapp.types.Money, or a builtin such as str"
        )
    if not isinstance(nullable, bool):
        raise RequestError(f"{where}: nullable {nullable!r}: want true or false")
    name = py_type.split("[", 1)[0]
    module = name.rpartition(".")[0]
    return Override(
        db_type=db_type.lower().removeprefix("pg_catalog."),
        column=column,
        annotation=py_type,
        module=module,
        nullable=nullable,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
    """The plugin options of one codegen entry in sqlc.yaml."""

    driver: str
    models: str
    emit_async: bool
    emit_schema: bool
    emit_exact_table_names: bool = False
    emit_one_column_rows: bool = False
    check_sql: bool = True
    untyped: str = "object"
    rename: dict[str, str] = dataclasses.field(default_factory=dict)
    overrides: tuple[Override, ...] = ()

    @staticmethod
    def parse(request: Request) -> "Options":
        """Returns the options of request, or raises RequestError naming the bad one."""
        options = dict(request.options)
        drivers = _DRIVERS.get(request.engine)
        if drivers is None:
            raise RequestError(
                f"engine {request.engine!r} is not supported: want sqlite, postgresql or mysql"
            )
        driver = options.pop("driver", drivers[0])
        if driver not in drivers:
            raise RequestError(
                f"option driver: {driver!r} does not fit engine {request.engine}: "
                f"want {' or '.join(drivers)}"
            )
        models = options.pop("models", "dataclass")
        if models not in ("dataclass", "pydantic"):
            raise RequestError(f"option models: {models!r}: want dataclass or pydantic")
        emit_async = _flag(options, "emit_async")
        if emit_async and driver == "asyncpg":
            raise RequestError("option emit_async: asyncpg's Querier is async already")
        if emit_async and driver not in ("psycopg", "pymysql"):
            raise RequestError(
                "option emit_async: only the psycopg and pymysql (through asyncmy) "
                "drivers have async connections"
            )
        emit_schema = _flag(options, "emit_schema")
        exact = _flag(options, "emit_exact_table_names")
        one_column_rows = _flag(options, "emit_one_column_rows")
        check_sql = _flag(options, "check_sql", default=True)
        untyped = options.pop("untyped", "object")
        if untyped not in ("object", "refuse"):
            raise RequestError(f"option untyped: {untyped!r}: want object or refuse")
        rename_value = options.pop("rename", {})
        if not isinstance(rename_value, dict):
            raise RequestError("option rename: want a mapping of SQL names to Python names")
        rename: dict[str, str] = {}
        for key, val in rename_value.items():
            if not isinstance(val, str) or not val.isidentifier() or keyword.iskeyword(val):
                raise RequestError(f"option rename: {key}: {val!r} is not a Python name")
            rename[key] = val
        overrides_value = options.pop("overrides", [])
        if not isinstance(overrides_value, list):
            raise RequestError("option overrides: want a list")
        overrides = tuple(_override(i, v) for i, v in enumerate(overrides_value))
        if options:
            raise RequestError(f"unknown options: {', '.join(sorted(options))}")
        return Options(
            driver=str(driver),
            models=str(models),
            emit_async=emit_async,
            emit_schema=emit_schema,
            emit_exact_table_names=exact,
            emit_one_column_rows=one_column_rows,
            check_sql=check_sql,
            untyped=str(untyped),
            rename=rename,
            overrides=overrides,
        )
