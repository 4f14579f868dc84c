"""Renders a query's method for asyncpg: one small async renderer per sqlc command.

The ``Querier`` of the asyncpg driver takes an ``asyncpg.Connection``, a
connection acquired from a pool, or the ``asyncpg.Pool`` itself (which runs
each call on a connection of its own). Parameters are bound positionally, as
``$1``, ``$2`` number them, and a row is read by position from the
``asyncpg.Record`` each fetch returns.
"""

from collections.abc import Callable

from ._literals import quoted
from ._methods import Flavor, param_rows, return_many, return_one
from ._module import Text
from ._plan import QueryPlan, copy_target
from ._values import item
from ._writer import Writer

# The annotation of the Querier's connection.
CONNECTION = "asyncpg.Connection | asyncpg.pool.PoolConnectionProxy | asyncpg.Pool"


def _call(w: Writer, plan: QueryPlan, method: str, target: str = "") -> None:
    """Writes one awaited call of the connection's method with the plan's SQL and parameters."""
    with w.block(f"{target}await self._conn.{method}(", ")"):
        w.line(f"{plan.constant},")
        for f in plan.binds:
            item(w, "", f.type.encode, f.name)


def _one(w: Writer, plan: QueryPlan, text: Text) -> None:
    _call(w, plan, "fetchrow", "row = ")
    return_one(w, plan)


def _many(w: Writer, plan: QueryPlan, text: Text) -> None:
    _call(w, plan, "fetch", "rows = ")
    return_many(w, plan, "rows")


def _exec(w: Writer, plan: QueryPlan, text: Text) -> None:
    _call(w, plan, "execute")


def _execrows(w: Writer, plan: QueryPlan, text: Text) -> None:
    _call(w, plan, "execute", "status = ")
    w.line("return _status_rows(status)")


def _execresult(w: Writer, plan: QueryPlan, text: Text) -> None:
    _call(w, plan, "execute", "status = ")
    with w.block("return ExecResult(", ")"):
        w.lines(["rowcount=_status_rows(status),", "status=status,"])


def _batchexec(w: Writer, plan: QueryPlan, text: Text) -> None:
    # One call sends every row; asyncpg runs them in a transaction of their
    # own unless the connection is in one already.
    with w.block("await self._conn.executemany(", ")"):
        w.line(f"{plan.constant},")
        param_rows(w, plan, "[", "],", "sqlite3")


def _identifier(name: str) -> str:
    """Returns an SQL identifier as PostgreSQL reads it: unquoted, or folded to lower case."""
    if name.startswith('"') and name.endswith('"') and len(name) > 1:
        return name[1:-1].replace('""', '"')
    return name.lower()


def _copyfrom(w: Writer, plan: QueryPlan, text: Text) -> None:
    # The constant holds sqlc's INSERT, prepared by the check; COPY takes its
    # table and columns, which asyncpg quotes.
    where = f"query {plan.name} ({plan.filename})"
    numbers = list(range(1, len(plan.params) + 1))
    table, columns = copy_target(plan.sql, numbers, where)
    schema, _, name = table.rpartition(".")
    with w.block("status = await self._conn.copy_records_to_table(", ")"):
        w.line(f"{text.hold(quoted(_identifier(name)))},")
        param_rows(w, plan, "records=[", "],", "sqlite3")
        with w.block("columns=[", "],"):
            w.lines([f"{text.hold(quoted(_identifier(c)))}," for c in columns])
        if schema:
            w.line(f"schema_name={text.hold(quoted(_identifier(schema)))},")
    w.line("return _status_rows(status)")


_BODIES: dict[str, Callable[[Writer, QueryPlan, Text], None]] = {
    ":one": _one,
    ":many": _many,
    ":exec": _exec,
    ":execrows": _execrows,
    ":execresult": _execresult,
    ":batchexec": _batchexec,
    ":copyfrom": _copyfrom,
}


def asyncpg_body(w: Writer, plan: QueryPlan, fl: Flavor, text: Text) -> None:
    """Writes the body of plan's method in the asyncpg Querier, whose flavor is always async."""
    _BODIES[plan.command](w, plan, text)
