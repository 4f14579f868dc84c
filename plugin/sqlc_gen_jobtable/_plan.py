"""Plans a query: everything its generated code needs, computed before any is written.

A ``QueryPlan`` is plain data: the SQL constant, the parameters in the order
of the signature and in the order the driver binds them, the row type and
its fields (or the one value a one-column result returns), the classes the
query needs and the method's return type. The renderers of ``_methods``
turn a plan into code and decide nothing but layout.
"""

import dataclasses
import re

from . import _naming as naming
from ._asyncpg_plan import check_asyncpg_command
from ._catalog import Catalog, Field
from ._classes import ClassPlan
from ._expressions import column_expressions, may_be_null
from ._mysql_sql import check_mysql_command, mysql_statement
from ._request import Query, RequestError, Table
from ._sql import postgres_slices, postgres_sql, slice_array_type, sqlite_slices

COMMANDS = (
    ":one",
    ":many",
    ":exec",
    ":execrows",
    ":execlastid",
    ":execresult",
    ":batchexec",
    ":batchone",
    ":batchmany",
    ":copyfrom",
)
# Commands that run one statement per row of a params class.
BATCH = (":batchexec", ":batchone", ":batchmany", ":copyfrom")
_RETURNS_ROWS = (":one", ":many", ":batchone", ":batchmany")
# An outer join may leave the tables of one side out of a row; found in the
# text as a whole, so a false find only makes an embedded field optional.
_OUTER_JOIN = re.compile(r"\b(LEFT|RIGHT|FULL)\s+(OUTER\s+)?JOIN\b", re.IGNORECASE)
_COPY = re.compile(
    r"\s*INSERT\s+INTO\s+(?P<table>[\w.\"]+)\s*\((?P<columns>[^)]*)\)\s*VALUES\s*"
    r"\((?P<values>\s*\$\d+\s*(?:,\s*\$\d+\s*)*)\)\s*;?\s*",
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True, slots=True)
class QueryPlan:
    """One query as its generated code needs it.

    ``params`` are in the order of the signature (the parameter numbers),
    ``binds`` in the order the driver binds them (they differ only on SQLite
    with sqlc.slice, where a parameter may be bound twice). ``value`` is set
    when the method returns a one-column result's value instead of a row of
    ``row_type``. ``names`` are the names the query's code binds or uses as
    fields, parameters and methods, which an import must not shadow.
    """

    name: str
    filename: str
    command: str
    driver: str
    models: str
    constant: str
    sql: str
    method: str
    params: tuple[Field, ...]
    binds: tuple[Field, ...]
    slices: tuple[str, ...]
    row_type: str
    row_fields: tuple[Field, ...]
    value: Field | None
    classes: tuple[ClassPlan, ...]
    params_type: str
    returns: str
    comments: tuple[str, ...]
    names: frozenset[str]

    @property
    def is_pg(self) -> bool:
        """Tells whether the code runs on psycopg rather than sqlite3."""
        return self.driver == "psycopg"

    @property
    def is_batch(self) -> bool:
        """Tells whether the method takes rows of a params class."""
        return self.command in BATCH


def check_command(query: Query, driver: str, where: str) -> None:
    """Raises RequestError when query's command cannot be generated for driver."""
    cmd = query.cmd
    if cmd not in COMMANDS:
        raise RequestError(
            f"{where}: command {cmd} is not supported: want one of " + ", ".join(COMMANDS)
        )
    if driver == "asyncpg":
        check_asyncpg_command(cmd, where)
    if cmd == ":execlastid" and driver == "psycopg":
        raise RequestError(
            f"{where}: :execlastid needs SQLite: PostgreSQL has no last insert id "
            "(a table may have no serial, or several, and psycopg's lastrowid is "
            "always None); add RETURNING id to the INSERT and use :one"
        )
    if driver == "pymysql":
        check_mysql_command(query, where)
    if cmd in (":batchone", ":batchmany") and driver == "sqlite3":
        raise RequestError(
            f"{where}: {cmd} needs PostgreSQL, where psycopg pipelines the statements; "
            "SQLite runs in the process, so call a :one or :many query in a loop"
        )
    if cmd in BATCH and not query.params:
        raise RequestError(
            f"{where}: {cmd} runs one statement per row of parameters: it needs parameters"
        )
    if cmd in (":batchexec", ":copyfrom") and query.columns:
        raise RequestError(
            f"{where}: {cmd} runs one statement per row of parameters: "
            "it needs parameters and returns nothing"
        )
    if cmd not in (":one", ":many") and any(c.embed_table for c in query.columns):
        raise RequestError(f"{where}: sqlc.embed needs :one or :many")
    if any(p.column.is_sqlc_slice for p in query.params) and cmd in BATCH and driver == "sqlite3":
        raise RequestError(f"{where}: sqlc.slice cannot be used in a {cmd} query on SQLite")


def copy_target(text: str, numbers: list[int], where: str) -> tuple[str, list[str]]:
    """Returns the table and the columns of a :copyfrom INSERT, in the order of numbers.

    numbers are the query's parameter numbers in order; each column's value
    is one of them. Raises RequestError when text is another statement.
    """
    match = _COPY.fullmatch(text)
    if match is None:
        raise RequestError(
            f"{where}: :copyfrom needs INSERT INTO table (columns) VALUES ($1, $2, ...) "
            "with a parameter for each column and nothing else"
        )
    columns = [c.strip() for c in match.group("columns").split(",")]
    values = [int(v.strip()[1:]) for v in match.group("values").split(",")]
    if len(columns) != len(values) or sorted(values) != numbers:
        raise RequestError(f"{where}: :copyfrom needs one parameter for each column, each once")
    order = dict(zip(values, columns, strict=True))
    return match.group("table"), [order[n] for n in numbers]


def _copy_sql(query: Query, params: list[tuple[int, Field]], where: str) -> str:
    """Returns the COPY statement that writes the columns of query's INSERT."""
    table, columns = copy_target(query.text, [n for n, _ in params], where)
    return f"COPY {table} ({', '.join(columns)}) FROM STDIN"


@dataclasses.dataclass(frozen=True, slots=True)
class _Statement:
    """The SQL a query's constant holds, and the parameters it binds in order."""

    sql: str
    binds: tuple[Field, ...]
    slices: tuple[str, ...] = ()


def _statement(
    query: Query, driver: str, params: list[tuple[int, Field]], where: str
) -> _Statement:
    """Returns the SQL of query rewritten for driver, with the order it binds params in."""
    fields = tuple(f for _, f in params)
    sql = query.text.strip()
    if query.cmd == ":copyfrom" and driver == "psycopg":
        return _Statement(_copy_sql(query, params, where), fields)
    if driver == "pymysql":
        sql, slices = mysql_statement(query, {n: f.name for n, f in params}, where)
        # sqlc lists a MySQL query's parameters in the order of their ? in
        # the text, while it numbers the named ones before the bare ones: the
        # list's order is the order to bind in, as sqlc-gen-go binds.
        by_number = dict(params)
        return _Statement(sql, tuple(by_number[p.number] for p in query.params), slices)
    if driver in ("psycopg", "asyncpg"):
        arrays = {
            p.number: slice_array_type(p.column.type_name, p.column.type_schema)
            for p in query.params
            if p.column.is_sqlc_slice
        }
        sql = postgres_slices(sql, arrays, where) if arrays else sql
    if driver == "psycopg":
        return _Statement(postgres_sql(sql, {n: f.name for n, f in params}, where), fields)
    if driver == "asyncpg":
        # asyncpg binds the $N as they are; the rewrite checks each has a parameter.
        postgres_sql(sql, {n: f.name for n, f in params}, where)
        if query.cmd == ":copyfrom":
            copy_target(sql, [n for n, _ in params], where)
        return _Statement(sql, fields)
    slice_numbers = {p.number for p in query.params if p.column.is_sqlc_slice}
    if slice_numbers:
        sql, order = sqlite_slices(sql, query, where)
        by_number = dict(params)
        slices = tuple(by_number[n].name for n in sorted(slice_numbers))
        return _Statement(sql, tuple(by_number[n] for n in order), slices)
    if len({p.column.is_named_param for p in query.params}) > 1:
        # sqlc then numbers the parameters in an order SQLite does not bind
        # them in (WHERE id > @after LIMIT ? becomes WHERE id > ? LIMIT ?
        # with limit as parameter 1), so the query would bind wrong values.
        raise RequestError(
            f"{where}: the SQL mixes named parameters (@name, sqlc.arg, sqlc.narg) "
            "with bare ?, which sqlc numbers out of order on SQLite: name every "
            "parameter or none"
        )
    return _Statement(sql, fields)


def _table_for(catalog: Catalog, query: Query) -> Table | None:
    """Returns the table whose columns query returns exactly, if any."""
    for table in catalog.request.tables:
        if len(table.columns) != len(query.columns):
            continue
        if all(
            q.name == t.name
            and q.type_name == t.type_name
            and q.not_null == t.not_null
            and q.is_array == t.is_array
            and q.table == table.name
            and catalog.table(q.table_schema, q.table) is table
            and not q.embed_table
            for q, t in zip(query.columns, table.columns, strict=True)
        ):
            return table
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Result:
    """What a query returns per row: a row type and its fields, or one value."""

    row_type: str = ""
    fields: tuple[Field, ...] = ()
    value: Field | None = None
    row_class: ClassPlan | None = None


def _result(catalog: Catalog, query: Query, where: str) -> _Result:
    """Returns the shape of query's rows; a query that returns none has an empty one."""
    if query.cmd not in _RETURNS_ROWS:
        return _Result()
    outer = bool(_OUTER_JOIN.search(query.text))
    fields = tuple(catalog.fields(query.columns, where, outer=outer, query=query))
    single = len(fields) == 1 and not fields[0].embed
    not_null = (
        single
        and query.columns[0].not_null
        and not may_be_null(column_expressions(query)[0], query)
    )
    if (
        single
        and not catalog.options.emit_one_column_rows
        and (query.cmd in (":many", ":batchmany") or not_null)
    ):
        # One column: the value itself, as sqlc-gen-go returns it. A :one of
        # a nullable column keeps its row, so that NULL and no row differ.
        return _Result(fields[0].type.annotation, fields, fields[0])
    table = _table_for(catalog, query)
    if table is not None:
        return _Result(f"models.{catalog.names.tables[(table.schema, table.name)]}", fields)
    row_type = f"{naming.pascal(query.name)}Row"
    row_class = ClassPlan(row_type, f"A row that {query.name} returns.", fields)
    return _Result(row_type, fields, row_class=row_class)


def _returns(command: str, row_type: str) -> str:
    """Returns the return annotation of a method of command over rows of row_type."""
    return {
        ":batchexec": "None",
        ":batchone": f"list[{row_type} | None]",
        ":batchmany": f"list[list[{row_type}]]",
        ":copyfrom": "int",
        ":one": f"{row_type} | None" if not row_type.endswith("| None") else row_type,
        ":many": f"list[{row_type}]",
        ":exec": "None",
        ":execrows": "int",
        ":execlastid": "int",
        ":execresult": "ExecResult",
    }[command]


def plan_query(catalog: Catalog, query: Query) -> QueryPlan:
    """Returns the plan of query, or raises RequestError naming it and the cause."""
    options = catalog.options
    where = f"query {query.name} ({query.filename})"
    check_command(query, options.driver, where)
    params = catalog.params(query.params, where)
    statement = _statement(query, options.driver, params, where)
    result = _result(catalog, query, where)
    classes = [result.row_class] if result.row_class else []
    params_type = f"{naming.pascal(query.name)}Params"
    if query.cmd in BATCH:
        doc = f"The parameters of one statement of {query.name}."
        classes.append(ClassPlan(params_type, doc, tuple(f for _, f in params)))
    constant = naming.constant(query.name)
    method = naming.method(query.name)
    names = {constant, method, *(f.name for _, f in params), *(f.name for f in result.fields)}
    names |= {c.name for c in classes}
    if query.cmd == ":execresult":
        names.add("ExecResult")
    return QueryPlan(
        name=query.name,
        filename=query.filename,
        command=query.cmd,
        driver=options.driver,
        models=options.models,
        constant=constant,
        sql=statement.sql,
        method=method,
        params=tuple(f for _, f in params),
        binds=statement.binds,
        slices=statement.slices,
        row_type=result.row_type,
        row_fields=result.fields,
        value=result.value,
        classes=tuple(classes),
        params_type=params_type,
        returns=_returns(query.cmd, result.row_type),
        comments=query.comments,
        names=frozenset(names),
    )
