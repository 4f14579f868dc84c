"""Writes the generated package: the query modules, the models and the schema.

The output is formatted as ``ruff format`` would format it, so generating is
deterministic and the files need no formatter: every call, signature and row
constructor is written exploded, one item a line with a trailing comma, a
shape the formatter keeps.
"""

import dataclasses
import pathlib
import re

from . import _naming as naming
from ._asyncpg import CONNECTION as ASYNCPG_CONNECTION
from ._asyncpg import asyncpg_body
from ._catalog import Catalog
from ._check import Descriptions, check
from ._classes import exec_result_plan, render_class
from ._helpers import HELPER_NEEDS, HELPERS
from ._literals import header, sql_triple_quoted
from ._methods import ASYNC, SYNC, Body, Flavor, default_body, render_method
from ._models import models_module
from ._module import Text, assemble
from ._mysql_methods import mysql_body
from ._mysql_sql import mysql_request
from ._options import Options
from ._plan import QueryPlan, plan_query
from ._request import Query, Request, RequestError
from ._server_types import reconcile
from ._sqlite_source import repair_sqlite_text
from ._writer import Writer

__all__ = ["Options", "generate"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Driver:
    """How a driver's Queriers are written: the connection each takes, and their methods' body.

    The Querier takes conn and is of flavor; emit_async adds an AsyncQuerier
    on async_conn, which is "" for a driver with no second front.
    """

    conn: str
    flavor: Flavor
    body: Body
    async_conn: str = ""


_DRIVERS = {
    "sqlite3": _Driver("sqlite3.Connection", SYNC, default_body),
    "psycopg": _Driver(
        "psycopg.Connection[TupleRow]", SYNC, default_body, "psycopg.AsyncConnection[TupleRow]"
    ),
    # asyncpg is async only: its one Querier takes a connection or the pool.
    "asyncpg": _Driver(ASYNCPG_CONNECTION, ASYNC, asyncpg_body),
    # Quoted: PyMySQL's Connection is generic in its stubs only. asyncmy
    # speaks the same SQL and returns the same types, in asyncio.
    "pymysql": _Driver(
        '"pymysql.Connection[pymysql.cursors.Cursor]"', SYNC, mysql_body, "asyncmy.Connection"
    ),
}


def _helpers(code: str) -> list[str]:
    """Returns the helpers code calls, and those they call, in a fixed order."""
    wanted: set[str] = set()
    for name in HELPERS:
        if re.search(rf"(?<![\w.]){name}\b", code):
            wanted.add(name)
    for name in list(wanted):
        wanted.update(HELPER_NEEDS.get(name, ()))
    return sorted(wanted)


def _plans(catalog: Catalog, queries: list[Query]) -> list[QueryPlan]:
    """Returns the plan of each query, or raises RequestError naming every refused one."""
    plans: list[QueryPlan] = []
    errors: list[str] = []
    for query in queries:
        try:
            plans.append(plan_query(catalog, query))
        except RequestError as err:
            errors.append(str(err))
    if errors:
        raise RequestError("\n".join(errors))
    return plans


def _server_plans(
    catalog: Catalog,
    modules: dict[str, list[Query]],
    described: Descriptions,
    planned: dict[str, list[QueryPlan]],
) -> None:
    """Plans again each module with a query whose types the server gives otherwise than sqlc.

    Raises RequestError naming every query whose server type has no Python type.
    """
    errors: list[str] = []
    for module, queries in modules.items():
        served: list[Query] = []
        for query in queries:
            found = described.get((query.filename, query.name))
            try:
                served.append(query if found is None else reconcile(catalog, query, found))
            except RequestError as err:
                errors.append(str(err))
        if served != queries and len(served) == len(queries):
            planned[module] = _plans(catalog, served)
    if errors:
        raise RequestError("\n".join(errors))


def _init(w: Writer, conn_type: str) -> None:
    """Writes a Querier's __init__, its signature exploded when it would not fit a line."""
    line = f"def __init__(self, conn: {conn_type}) -> None:"
    if w.fits(line):
        w.line(line)
    else:
        with w.block("def __init__(", ") -> None:"):
            w.lines(["self,", f"conn: {conn_type},"])
    with w.indent():
        w.line("self._conn = conn")


def _classes(catalog: Catalog, filename: str, plans: list[QueryPlan], text: Text) -> list[str]:
    """Returns the classes of a query module: ExecResult, rows, params, then the Queriers."""
    options = catalog.options
    w = Writer()
    if any(p.command == ":execresult" for p in plans):
        w.lines(["", ""])
        render_class(w, exec_result_plan(options.driver), options.models, text)
    for plan in plans:
        for cls in plan.classes:
            w.lines(["", ""])
            render_class(w, cls, options.models, text)
    driver = _DRIVERS[options.driver]
    fronts = [("Querier", driver.conn, driver.flavor)]
    if options.emit_async:
        fronts.append(("AsyncQuerier", driver.async_conn, ASYNC))
    for name, conn_type, flavor in fronts:
        w.lines(["", ""])
        with w.block(f"class {name}:"):
            w.line(f'"""Runs the queries of {text.hold(filename)} on one connection."""')
            w.line()
            _init(w, conn_type)
        for plan in plans:
            w.line()
            w.extend(render_method(plan, flavor, text, driver.body))
    return w.result()


def _query_module(catalog: Catalog, filename: str, plans: list[QueryPlan]) -> str:
    """Returns the module of one query file from the plans of its queries."""
    text = Text()
    body: list[str] = []
    for plan in plans:
        body += ["", f"{plan.constant} = {text.hold(sql_triple_quoted(plan.sql))}"]
    classes = _classes(catalog, filename, plans, text)
    helpers = _helpers("\n".join(classes))
    helper_text = "\n".join(HELPERS[h] for h in helpers)
    typevars = [v for v in ("_T", "_V") if re.search(rf"\b{v}\b", helper_text)]
    if typevars:
        body += ["", *[f'{v} = TypeVar("{v}")' for v in typevars]]
    for helper in helpers:
        body += ["", "", HELPERS[helper]]
    body += classes
    taken = {n for p in plans for n in p.names}
    head = [*header(catalog.request, filename), f'"""Queries of {text.hold(filename)}."""']
    return assemble(head, body, text, taken, catalog.override_modules)


def schema_sql(request: Request, option: str) -> str:
    """Returns the schema files' SQL joined, each file's last statement ended by ``;``.

    sqlc names the schema files relative to the directory it runs in; a
    directory stands for its .sql files in name order. Raises RequestError,
    naming option (what needs the schema), when a file cannot be read.
    """
    parts: list[str] = []
    for name in request.schema_paths:
        path = pathlib.Path(name)
        files = sorted(path.glob("*.sql")) if path.is_dir() else [path]
        for file in files:
            try:
                part = file.read_text(encoding="utf-8").strip()
            except OSError as err:
                # sqlc gives the paths relative to sqlc.yaml but runs the plugin
                # in its own working directory, and sends nothing to resolve them.
                raise RequestError(
                    f"{option}: cannot read {file}: {err.strerror}; "
                    "run sqlc from the directory of sqlc.yaml"
                ) from None
            # A file may end its last statement without a semicolon; the next
            # file's first statement must not run on from it. A line comment
            # at the end gets the semicolon on a line of its own.
            if part and not part.endswith(";"):
                part += "\n;"
            parts.append(part)
    return "\n".join(parts)


def _schema_module(request: Request) -> str:
    """Returns the schema module: the schema files' SQL as one constant, SCHEMA."""
    lines = header(request, ", ".join(request.schema_paths))
    lines += ['"""The schema this package was generated from."""', ""]
    lines += [f"SCHEMA = {sql_triple_quoted(schema_sql(request, 'option emit_schema'))}"]
    return "\n".join(lines) + "\n"


def _module_name(filename: str, files: dict[str, str], options: Options) -> str:
    """Returns the module of a query file, or raises RequestError when it would clash."""
    module = naming.identifier(pathlib.PurePath(filename).name.removesuffix(".sql"))
    if module == "models" or (module == "schema" and options.emit_schema):
        raise RequestError(f"query file {filename}: its module would replace {module}.py")
    if module + ".py" in files:
        raise RequestError(
            f"query file {filename}: another query file also makes the module {module}.py"
        )
    return module


def generate(request: Request, warnings: list[str] | None = None) -> dict[str, str]:
    """Returns the generated files by name, or raises RequestError naming every refusal.

    warnings, when given, receives a line for each value typed object.
    """
    options = Options.parse(request)
    request = mysql_request(repair_sqlite_text(request))
    catalog = Catalog(request, options)
    by_file: dict[str, list[Query]] = {}
    for query in request.queries:
        by_file.setdefault(query.filename, []).append(query)
    init = [*header(request, None), '"""Generated by sqlc from the schema and queries."""']
    files = {"__init__.py": "\n".join(init) + "\n"}
    if options.emit_schema:
        files["schema.py"] = _schema_module(request)
    errors: list[str] = []
    planned: dict[str, list[QueryPlan]] = {}
    modules: dict[str, list[Query]] = {}
    for filename, queries in sorted(by_file.items()):
        module = _module_name(filename, files, options)
        files[module + ".py"] = ""
        modules[module] = queries
        try:
            planned[module] = _plans(catalog, queries)
        except RequestError as err:
            errors.append(str(err))
    if not errors and options.check_sql:
        schema = schema_sql(request, "option check_sql")
        try:
            described = check(request.engine, schema, [p for ps in planned.values() for p in ps])
            _server_plans(catalog, modules, described, planned)
        except RequestError as err:
            errors.append(str(err))
    for module, plans in planned.items():
        files[module + ".py"] = _query_module(catalog, plans[0].filename, plans)
    # The models last: the query modules tell which type aliases they use.
    try:
        files["models.py"] = models_module(catalog)
    except RequestError as err:
        errors.insert(0, str(err))
    if errors:
        raise RequestError("\n".join(errors))
    if warnings is not None:
        warnings.extend(dict.fromkeys(catalog.types.warnings))
    return files
