"""Renders the bodies of a query's method on PyMySQL and asyncmy: one renderer per command.

The sync ``Querier`` runs on PyMySQL, the ``AsyncQuerier`` on asyncmy, which
speaks the same SQL and returns the same types. Neither connection has an
``execute`` of its own: every method opens a plain cursor (whatever cursor
class the connection was made with, so rows are tuples), runs its statement
and closes the cursor.
Parameters go as a tuple for ``%s``; a query without parameters is run
without any, so that PyMySQL leaves its percent signs as they are.
"""

from collections.abc import Callable

from ._methods import Flavor, expand_slices, param_rows, return_many, return_one, slice_args
from ._module import Text
from ._plan import QueryPlan
from ._values import bind_args
from ._writer import Writer


def _cursor(fl: Flavor) -> str:
    """Returns the with statement that opens the method's plain cursor, cur."""
    driver = "asyncmy" if fl.aw else "pymysql"
    return f"{fl.with_} self._conn.cursor({driver}.cursors.Cursor) as cur:"


def _execute(w: Writer, plan: QueryPlan, fl: Flavor, target: str = "") -> None:
    """Writes the one execute call of the statement on cur; target takes its rowcount."""
    call = f"{target}{fl.aw}cur.execute("
    if not plan.binds:
        w.line(f"{call}{plan.constant})")
        return
    with w.block(call, ")"):
        w.line(("_sql" if plan.slices else plan.constant) + ",")
        if plan.slices:
            slice_args(w, plan)
        else:
            # Positional, a tuple, as for sqlite3.
            bind_args(w, plan.binds, "sqlite3")


def _exec(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    with w.block(_cursor(fl)):
        _execute(w, plan, fl)


def _execrows(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    # execute returns the rowcount (asyncmy's stubs type cur.rowcount object).
    with w.block(_cursor(fl)):
        _execute(w, plan, fl, "count = ")
    w.line("return count")


def _execresult(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    with w.block(_cursor(fl)):
        _execute(w, plan, fl, "count = ")
        with w.block("return ExecResult(", ")"):
            w.lines(["rowcount=count,", "lastrowid=cur.lastrowid,"])


def _execlastid(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    error = "asyncmy.errors.DataError" if fl.aw else "pymysql.err.DataError"
    with w.block(_cursor(fl)):
        _execute(w, plan, fl)
        # AUTO_INCREMENT never makes 0: 0 says the statement made no id.
        with w.block("if not cur.lastrowid:"):
            message = f'"{plan.name} generated no AUTO_INCREMENT id"'
            if w.fits(f"raise {error}({message})"):
                w.line(f"raise {error}({message})")
            else:
                # A string alone on its line: ruff format splits it at no width.
                w.lines([f"message = {message}", f"raise {error}(message)"])
        w.line("return cur.lastrowid")


def _one(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    with w.block(_cursor(fl)):
        _execute(w, plan, fl)
        w.line(f"row = {fl.aw}cur.fetchone()")
    return_one(w, plan)


def _many(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    with w.block(_cursor(fl)):
        _execute(w, plan, fl)
        w.line(f"rows = {fl.aw}cur.fetchall()")
    return_many(w, plan, "rows")


def _batchexec(w: Writer, plan: QueryPlan, fl: Flavor) -> None:
    # One executemany: the driver sends an INSERT ... VALUES as one
    # statement of many rows, anything else as a statement per row.
    param_rows(w, plan, "params = [", "]", "sqlite3")
    with w.block("if not params:"):
        w.line("return" + (" 0" if plan.command == ":copyfrom" else ""))
    with w.block(_cursor(fl)):
        if plan.command == ":copyfrom":
            w.line(f"count = {fl.aw}cur.executemany({plan.constant}, params)")
        else:
            w.line(f"{fl.aw}cur.executemany({plan.constant}, params)")
    if plan.command == ":copyfrom":
        w.line("return count or 0")


MYSQL_BODIES: dict[str, Callable[[Writer, QueryPlan, Flavor], None]] = {
    ":one": _one,
    ":many": _many,
    ":exec": _exec,
    ":execrows": _execrows,
    ":execresult": _execresult,
    ":execlastid": _execlastid,
    ":batchexec": _batchexec,
    ":copyfrom": _batchexec,
}


def mysql_body(w: Writer, plan: QueryPlan, fl: Flavor, text: Text) -> None:
    """Writes plan's method body on PyMySQL or asyncmy: slices expanded, then its command's."""
    expand_slices(w, plan, "%s", "_mysql_marks")
    MYSQL_BODIES[plan.command](w, plan, fl)
