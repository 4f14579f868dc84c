"""Renders the expressions of a method: the parameters it binds and the rows it builds.

Every function writes whole lines through a Writer. An expression that
follows other text on its first line (``return Row(``) takes that text as
``prefix``; one that ends an argument list takes its trailing comma as
``suffix``. A conversion call stays on one line while it fits; past the
line length it is exploded with a trailing comma, as ruff format writes it.
"""

from ._catalog import Field, attr
from ._writer import Writer


def item(w: Writer, prefix: str, template: str, value: str) -> None:
    """Writes one argument or entry, ended by a comma: prefix, then template applied to value."""
    line = f"{prefix}{template.replace('{}', value)},"
    if w.fits(line) or not template.endswith("({})"):
        w.line(line)
        return
    with w.block(f"{prefix}{template.removesuffix('{})')}", "),"):
        w.line(f"{value},")


def bind_args(
    w: Writer,
    fields: tuple[Field, ...],
    driver: str,
    *,
    owner: str = "",
    models: str = "",
    suffix: str = ",",
    explode: bool = False,
) -> None:
    """Writes the parameters argument of a call: a tuple for sqlite3, a dict for psycopg.

    owner prefixes each value (``row.``), which then names an attribute of a
    params class of the models mode. A tuple of one value that needs no
    conversion stays on one line unless explode is set.
    """
    if not fields:
        return

    def value(f: Field) -> str:
        return owner + (attr(f, models) if owner else f.name)

    if driver == "sqlite3":
        if len(fields) == 1 and fields[0].type.encode == "{}" and not explode:
            w.line(f"({value(fields[0])},){suffix}")
            return
        with w.block("(", ")" + suffix):
            for f in fields:
                item(w, "", f.type.encode, value(f))
        return
    with w.block("{", "}" + suffix):
        for f in fields:
            item(w, f'"{f.name}": ', f.type.encode, value(f))


def construct(
    w: Writer,
    prefix: str,
    row_type: str,
    fields: tuple[Field, ...],
    models: str,
    *,
    start: int = 0,
    suffix: str = "",
) -> None:
    """Writes the constructor of a row of row_type from the driver's row, from row[start].

    An embedded model is built from its columns in turn; in a query with an
    outer join it is None when all of them are NULL.
    """
    w.line(f"{prefix}{row_type}(")
    i = start
    with w.indent():
        for f in fields:
            if not f.embed:
                item(w, f"{attr(f, models)}=", f.type.decode, f"row[{i}]")
                i += 1
                continue
            model = f"models.{f.embed}"
            if f.type.annotation.endswith("| None"):
                # Every column NULL: the outer join found no row of the table.
                stop = i + len(f.embed_fields)
                w.lines([f"{attr(f, models)}=None", f"if _all_null(row[{i}:{stop}])"])
                construct(w, "else ", model, f.embed_fields, models, start=i, suffix=",")
            else:
                prefix_ = f"{attr(f, models)}="
                construct(w, prefix_, model, f.embed_fields, models, start=i, suffix=",")
            i += len(f.embed_fields)
    w.line(")" + suffix)


def exploded(
    w: Writer, prefix: str, expression: str, suffix: str = "", *, force: bool = False
) -> None:
    """Writes prefix + expression + suffix on one line if it fits, else the call exploded.

    An expression that is a call (``f(a, b)``) too long for the line, or any
    call with force, is written one argument a line with a trailing comma,
    which ruff format keeps at every line length; anything else stays on its
    line.
    """
    line = f"{prefix}{expression}{suffix}"
    opener = expression.find("(")
    if (w.fits(line) and not force) or opener < 0 or not expression.endswith(")"):
        w.line(line)
        return
    args: list[str] = []
    depth, start = 0, opener + 1
    for i, ch in enumerate(expression[opener + 1 : -1], opener + 1):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            args.append(expression[start:i].strip())
            start = i + 1
    args.append(expression[start:-1].strip())
    with w.block(f"{prefix}{expression[: opener + 1]}", ")" + suffix):
        w.lines([f"{arg}," for arg in args if arg])
