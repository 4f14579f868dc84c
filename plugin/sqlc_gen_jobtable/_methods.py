"""Renders a query's method from its plan: one small renderer per sqlc command.

A method is rendered once per front: the sync ``Querier`` and the
``AsyncQuerier`` share every renderer, which writes the await, ``async def``
and ``async with`` of its ``Flavor`` (empty or plain for the sync one).
``render_method`` writes what every driver's method has (signature,
docstring, notes); a ``Body`` writes what it does on one driver: this
module's for sqlite3 and psycopg, ``_asyncpg``'s and ``_mysql_methods``'s
for theirs, which share the helpers here that read rows and bind parameters.
"""

import dataclasses
from collections.abc import Callable

from ._classes import note
from ._literals import docstring
from ._module import Text
from ._plan import QueryPlan
from ._values import bind_args, construct, exploded, item
from ._writer import Writer


@dataclasses.dataclass(frozen=True, slots=True)
class Flavor:
    """The words that make a method sync or async: its await, def and with."""

    aw: str
    def_: str
    with_: str


SYNC = Flavor(aw="", def_="def", with_="with")
ASYNC = Flavor(aw="await ", def_="async def", with_="async with")


def _short(plan: QueryPlan) -> str | None:
    """One result as an expression of one line: the value, or a row of no columns; else None."""
    if plan.value is not None:
        return plan.value.type.decode.replace("{}", "row[0]")
    if not plan.row_fields:
        # A query of no columns (SELECT FROM t) still returns rows: empty ones.
        return f"{plan.row_type}()"
    return None


def _decoded(w: Writer, prefix: str, plan: QueryPlan, suffix: str = "") -> None:
    """Writes one result built from the driver's row: the value, or the row's constructor."""
    short = _short(plan)
    if short is not None:
        exploded(w, prefix, short, suffix)
        return
    construct(w, prefix, plan.row_type, plan.row_fields, plan.models, suffix=suffix)


def expand_slices(w: Writer, plan: QueryPlan, mark: str = "?", helper: str = "_marks") -> None:
    """Writes the statements that expand each sqlc.slice into one placeholder mark per value.

    helper names the function of HELPERS that writes the marks.
    """
    for i, name in enumerate(plan.slices):
        source = plan.constant if i == 0 else "_sql"
        marker = f'"/*SLICE:{name}*/{mark}"'
        line = f"_sql = {source}.replace({marker}, {helper}(len({name})))"
        if w.fits(line):
            w.line(line)
            continue
        with w.block(f"_sql = {source}.replace(", ")"):
            w.lines([f"{marker},", f"{helper}(len({name})),"])


def slice_args(w: Writer, plan: QueryPlan) -> None:
    """Writes the positional parameters of a query with sqlc.slice, each list spread."""
    items = w.child()
    with items.indent():
        for f in plan.binds:
            if f.name in plan.slices:
                items.line(f"*{f.type.encode.replace('{}', f.name)},")
            else:
                item(items, "", f.type.encode, f.name)
    lines = items.result()
    if len(lines) == 1:
        w.line(f"({lines[0].strip()}),")
        return
    w.line("(")
    w.extend(lines)
    w.line("),")


def _execute(w: Writer, plan: QueryPlan, fl: Flavor, target: str = "") -> None:
    """Writes the one execute call of a single statement, its cursor bound to target."""
    with w.block(f"{target}{fl.aw}self._conn.execute(", ")"):
        w.line(("_sql" if plan.slices else plan.constant) + ",")
        if plan.slices:
            slice_args(w, plan)
        else:
            bind_args(w, plan.binds, plan.driver)


def _exec(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    _execute(w, plan, fl)


def _execrows(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    _execute(w, plan, fl, "cur = ")
    w.line("return cur.rowcount")


def _execresult(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    _execute(w, plan, fl, "cur = ")
    last = "status=cur.statusmessage" if plan.is_pg else "lastrowid=cur.lastrowid"
    with w.block("return ExecResult(", ")"):
        w.lines(["rowcount=cur.rowcount,", f"{last},"])


def _execlastid(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    _execute(w, plan, fl, "cur = ")
    with w.block("if cur.lastrowid is None:"):
        w.line(f'raise sqlite3.DatabaseError("{plan.name} inserted no row")')
    w.line("return cur.lastrowid")


def return_one(w: Writer, plan: QueryPlan) -> None:
    """Writes the end of a :one method: None when ``row`` is None, else its value or row."""
    with w.block("if row is None:"):
        w.line("return None")
    if plan.value is not None and plan.value.type.decode == "{}":
        # The driver's row holds Any: a typed local makes mypy check the return.
        w.lines([f"_value: {plan.value.type.annotation} = row[0]", "return _value"])
    else:
        _decoded(w, "return ", plan)


def return_many(w: Writer, plan: QueryPlan, rows: str) -> None:
    """Writes the return of a :many method: a value or row for each row of rows."""
    fetch = f"for row in {rows}"
    short = _short(plan)
    if short is not None:
        joined = f"return [{short} {fetch}]"
        if w.fits(joined):
            w.line(joined)
            return
    with w.block("return [", "]"):
        if short is not None:
            # Joined, the item and its loop would fit a longer line, where
            # ruff format would join them: a call's magic trailing comma
            # keeps them apart at every line length.
            exploded(w, "", short, force=True)
        else:
            _decoded(w, "", plan)
        w.line(fetch)


def _one(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    _execute(w, plan, fl, "cur = ")
    w.line(f"row = {fl.aw}cur.fetchone()")
    return_one(w, plan)


def _many(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    _execute(w, plan, fl, "cur = ")
    return_many(w, plan, f"{fl.aw}cur.fetchall()")


def param_rows(w: Writer, plan: QueryPlan, opener: str, closer: str, style: str) -> None:
    """Writes a list comprehension of the parameters of each of rows, between opener and closer.

    style is bind_args's: "sqlite3" makes each a tuple, in the order of the
    placeholders; "psycopg" a dict by name.
    """
    inner = w.child()
    bind_args(inner, plan.binds, style, owner="row.", models=plan.models, suffix="")
    lines = inner.result()
    # A one-line value (a tuple of one) has no magic trailing comma: ruff
    # format joins the comprehension when it fits.
    joined = f"{opener}{lines[0].strip()} for row in rows{closer}" if len(lines) == 1 else ""
    if joined and w.fits(joined):
        w.line(joined)
        return
    with w.block(opener, closer):
        bind_args(w, plan.binds, style, owner="row.", models=plan.models, suffix="")
        w.line("for row in rows")


def _executemany(w: Writer, plan: QueryPlan, opener: str) -> None:
    """Writes one executemany call that sends a statement for each of rows."""
    with w.block(opener, ")"):
        w.line(f"{plan.constant},")
        param_rows(w, plan, "[", "],", plan.driver)


def _batchexec(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    # One call sends every row: sqlite3 loops in C, and psycopg pipelines
    # the statements into one round trip.
    if not plan.is_pg:
        target = "cur = " if plan.command == ":copyfrom" else ""
        _executemany(w, plan, f"{target}self._conn.executemany(")
        return
    with w.block(f"{fl.with_} self._conn.cursor() as cur:"):
        _executemany(w, plan, f"{fl.aw}cur.executemany(")


def _copyfrom(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    if not plan.is_pg:
        _batchexec(w, plan, fl)
        w.line("return cur.rowcount")
        return
    w.line("count = 0")
    copy = f"{fl.with_} self._conn.cursor() as cur, cur.copy({plan.constant}) as copy:"
    with w.block(copy), w.block("for row in rows:"):
        inner = w.child()
        bind_args(inner, plan.params, "sqlite3", owner="row.", models=plan.models, suffix="")
        lines = inner.result()
        # A tuple of one has no magic trailing comma: ruff format joins it when it fits.
        joined = f"{fl.aw}copy.write_row({lines[0].strip()})" if len(lines) == 1 else ""
        if joined and w.fits(joined):
            w.line(joined)
        else:
            with w.block(f"{fl.aw}copy.write_row(", ")"):
                bind_args(
                    w,
                    plan.params,
                    "sqlite3",
                    owner="row.",
                    models=plan.models,
                    suffix="",
                    explode=True,
                )
        w.line("count += 1")
    w.line("return count")


def _batch_rows(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    """Writes a :batchone or :batchmany body: one pipelined statement per params row."""
    param_rows(w, plan, "params = [", "]", plan.driver)
    each = f"{plan.row_type} | None" if plan.command == ":batchone" else f"list[{plan.row_type}]"
    w.line(f"results: list[{each}] = []")
    with w.block("if not params:"):
        w.line("return results")
    with w.block(f"{fl.with_} self._conn.cursor() as cur:"):
        w.line(f"{fl.aw}cur.executemany({plan.constant}, params, returning=True)")
        with w.block("while True:"):
            if plan.command == ":batchone":
                _collect_one(w, plan, fl)
            else:
                _collect_many(w, plan, fl)
            with w.block("if not cur.nextset():"):
                w.line("break")
    w.line("return results")


def _collect_one(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    w.line(f"row = {fl.aw}cur.fetchone()")
    with w.block("if row is None:"):
        w.line("results.append(None)")
    with w.block("else:"):
        short = _short(plan)
        if short is not None:
            joined = f"results.append({short})"
            if w.fits(joined):
                w.line(joined)
                return
        with w.block("results.append(", ")"):
            _decoded(w, "", plan)


def _collect_many(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    short = _short(plan)
    joined = f"results.append([{short} for row in {fl.aw}cur.fetchall()])"
    if short is not None and w.fits(joined):
        w.line(joined)
        return
    with w.block("results.append(", ")"), w.block("[", "]"):
        _decoded(w, "", plan)
        w.line(f"for row in {fl.aw}cur.fetchall()")


_BODIES: dict[str, Callable[[Writer, QueryPlan, Flavor], None]] = {
    ":one": _one,
    ":many": _many,
    ":exec": _exec,
    ":execrows": _execrows,
    ":execresult": _execresult,
    ":execlastid": _execlastid,
    ":batchexec": _batchexec,
    ":batchone": _batch_rows,
    ":batchmany": _batch_rows,
    ":copyfrom": _copyfrom,
}


def default_body(w: Writer, plan: QueryPlan, fl: Flavor, text: Text) -> None:
    """Writes plan's method body on sqlite3 or psycopg: slices expanded, then its command's."""
    expand_slices(w, plan)
    _BODIES[plan.command](w, plan, fl)


# Writes the body of a query's method for one driver: the writer, the plan,
# the flavor of the Querier it is in, and the module's Text, which holds the
# constants the body names.
Body = Callable[[Writer, QueryPlan, Flavor, Text], None]


def render_method(plan: QueryPlan, fl: Flavor, text: Text, body: Body) -> list[str]:
    """Returns the lines of plan's method in a Querier class of flavor fl.

    The signature, docstring and notes are every driver's; body writes what
    the method does on the driver (``default_body`` for sqlite3 and psycopg).
    """
    w = Writer()
    with w.indent():
        with w.block(f"{fl.def_} {plan.method}(", f") -> {plan.returns}:"):
            w.line("self,")
            if plan.is_batch:
                w.line(f"rows: Iterable[{plan.params_type}],")
            elif plan.params:
                w.line("*,")
                w.lines([f"{f.name}: {f.type.annotation}," for f in plan.params])
        with w.indent():
            docstring(w, plan.comments, text)
            for f in (*plan.params, *([plan.value] if plan.value else [])):
                note(w, f, name=True)
            body(w, plan, fl, text)
    return w.result()
