"""Renders the classes of the generated code: rows, parameters, enums, ExecResult."""

import dataclasses

from . import _naming as naming
from ._catalog import Field, renamed_by_pydantic
from ._literals import docstring, quoted
from ._module import Text
from ._pytype import PyType
from ._request import Enum
from ._writer import Writer


@dataclasses.dataclass(frozen=True, slots=True)
class ClassPlan:
    """A class to generate: its name, its docstring and its fields in order."""

    name: str
    doc: str
    fields: tuple[Field, ...]


def render_class(w: Writer, plan: ClassPlan, models: str, text: Text) -> None:
    """Writes plan as a frozen dataclass or a frozen pydantic model, by models."""
    if models == "pydantic":
        w.line(f"class {plan.name}(pydantic.BaseModel):")
    else:
        w.lines(["@dataclasses.dataclass(frozen=True, slots=True)", f"class {plan.name}:"])
    with w.indent():
        docstring(w, [plan.doc], text)
        if plan.fields or models == "pydantic":
            w.line()
        if models == "pydantic":
            _pydantic_body(w, plan.fields, text)
        else:
            for f in plan.fields:
                note(w, f)
                w.line(f"{f.name}: {f.type.annotation}")


def note(w: Writer, field: Field, name: bool = False) -> None:
    """Writes the comment of an untyped field: why it is object and the fix."""
    if field.type.note:
        w.line("# " + (f"{field.name}: " if name else "") + field.type.note)


def _pydantic_body(w: Writer, fields: tuple[Field, ...], text: Text) -> None:
    renamed = [f for f in fields if renamed_by_pydantic(f)]
    if renamed:
        w.line("model_config = pydantic.ConfigDict(frozen=True, populate_by_name=True)")
    else:
        w.line("model_config = pydantic.ConfigDict(frozen=True)")
    if fields:
        w.line()
    for f in fields:
        note(w, f)
        if f in renamed:
            alias = text.hold(quoted(f.alias or f.name))
            w.line(f"{f.name}_: {f.type.annotation} = pydantic.Field(alias={alias})")
        else:
            w.line(f"{f.name}: {f.type.annotation}")


def render_enum(w: Writer, enum: Enum, name: str, text: Text) -> None:
    """Writes enum as an enum.StrEnum class called name, a member per value."""
    w.line(f"class {name}(enum.StrEnum):")
    with w.indent():
        docstring(w, [enum.comment.strip() or f"The values of the {enum.name} enum."], text)
        w.line()
        taken: set[str] = set()
        for value in enum.values:
            w.line(f"{naming.enum_member(value, taken)} = {text.hold(quoted(value))}")
        if not enum.values:
            w.line("pass")


def exec_result_plan(driver: str) -> ClassPlan:
    """Returns the ExecResult class of driver: what one :execresult statement did."""
    if driver in ("sqlite3", "pymysql"):
        return ClassPlan(
            "ExecResult",
            "What one :execresult statement did: the cursor's rowcount and lastrowid.",
            (Field("rowcount", PyType("int")), Field("lastrowid", PyType("int | None"))),
        )
    # asyncpg always returns the status; psycopg's may be None.
    status = PyType("str") if driver == "asyncpg" else PyType("str | None")
    return ClassPlan(
        "ExecResult",
        "What one :execresult statement did: its rowcount and status message.",
        (Field("rowcount", PyType("int")), Field("status", status)),
    )
