"""Writes the models module: a class per enum and per table, and the type aliases."""

import re

from ._catalog import Catalog
from ._classes import ClassPlan, render_class, render_enum
from ._helpers import ALIASES
from ._literals import header
from ._module import Text, assemble
from ._writer import Writer

# Two short aliases rather than one long one: each fits on a line at any line
# length from ruff's default of 88 up, so ruff format leaves them as they are.
_JSON_ALIAS = (
    "JSONScalar: TypeAlias = str | int | float | bool | None\n"
    'JSONValue: TypeAlias = dict[str, "JSONValue"] | list["JSONValue"] | JSONScalar'
)
# pydantic cannot build a schema from a recursive TypeAlias (it recurses
# without end) and Python 3.11 has no ``type`` statement; pydantic's own
# JsonValue is the same type, spelled so that both pydantic and mypy take it.
_PYDANTIC_JSON_ALIAS = "JSONValue: TypeAlias = pydantic.JsonValue"


def _aliases(catalog: Catalog) -> list[str]:
    """Returns the definitions of the type aliases the catalog's fields used."""
    aliases: list[str] = []
    if "JSONValue" in catalog.aliases:
        pydantic = catalog.options.models == "pydantic"
        aliases.append(_PYDANTIC_JSON_ALIAS if pydantic else _JSON_ALIAS)
    for alias in sorted(catalog.aliases - {"JSONValue"}):
        aliases.append(ALIASES[alias])
    return aliases


def models_module(catalog: Catalog) -> str:
    """Returns the models module; called after the query modules, whose aliases it defines.

    Raises RequestError when a column of a table has no exact Python type.
    """
    request, text = catalog.request, Text()
    classes = Writer()
    taken: set[str] = set()
    for enum in sorted(request.enums, key=lambda e: (e.schema, e.name)):
        name = catalog.names.enums[(enum.schema, enum.name.lower())]
        classes.lines(["", ""])
        render_enum(classes, enum, name, text)
        taken.add(name)
    for table in sorted(request.tables, key=lambda t: (t.schema, t.name)):
        where = f"table {table.schema + '.' if table.schema else ''}{table.name}"
        fields = catalog.fields(table.columns, where, owner=table.name)
        doc = table.comment.strip() or f"A row of the {table.name} table."
        name = catalog.names.tables[(table.schema, table.name)]
        taken |= {name, *(f.name for f in fields)}
        classes.lines(["", ""])
        render_class(classes, ClassPlan(name, doc, tuple(fields)), catalog.options.models, text)
    aliases = _aliases(catalog)
    body = ["", *aliases] if aliases else []
    code = "\n".join(body + classes.result())
    # The models module refers to its own classes unqualified.
    code = re.sub(r"(?<![\w.])models\.", "", code)
    head = [*header(request, None), '"""Row types of the tables in the schema."""']
    lines = code.split("\n") if code else []
    return assemble(head, lines, text, taken, catalog.override_modules, False)
