"""Assembles a generated module: its imports follow from the code it holds.

The code is written with every module spelled by its plain name (``uuid.UUID``,
``models.Mood``) and every piece of user text (SQL, comments) held aside as a
token, so that nothing in it is mistaken for code. The module then imports
exactly what its code refers to, which keeps it ruff-clean; a module whose
own name is taken by a field, parameter, method or class of the file is
imported under a private alias (``import uuid as _uuid``) instead.
"""

import re
import sys

# Modules the generated code may refer to: the standard library's first, then
# the third-party ones, longest first so that a dotted name wins.
STDLIB = ("dataclasses", "datetime", "decimal", "enum", "ipaddress", "re", "sqlite3", "uuid")
THIRD_PARTY = (
    "asyncpg",
    "psycopg.types.multirange",
    "psycopg.types.range",
    "psycopg.types.json",
    "psycopg",
    "pydantic",
    "pymysql.cursors",
    "pymysql.err",
    "pymysql",
    "asyncmy.cursors",
    "asyncmy.errors",
    "asyncmy",
)
# Names imported from a module, by the module they come from.
_FROM = {
    "Callable": "collections.abc",
    "Iterable": "collections.abc",
    "TypeAlias": "typing",
    "TypeVar": "typing",
    "TupleRow": "psycopg.rows",
}


class Text:
    """Holds user text aside while code is written, as tokens no regex can match."""

    def __init__(self) -> None:
        self._texts: list[str] = []

    def hold(self, text: str) -> str:
        """Returns a token that stands for text until restore."""
        self._texts.append(text)
        return f"\x00{len(self._texts) - 1}\x00"

    def restore(self, code: str) -> str:
        """Returns code with every token replaced by its text."""
        return re.sub("\x00(\\d+)\x00", lambda m: self._texts[int(m.group(1))], code)


def _refs(code: str, modules: list[str]) -> set[str]:
    if not modules:
        return set()
    pattern = "|".join(re.escape(m) for m in sorted(modules, key=len, reverse=True))
    return set(re.findall(rf"(?<![\w.])({pattern})\.", code))


def _imports(
    code: str, used: set[str], aliases: dict[str, str], uses_models: bool, local: bool
) -> list[str]:
    """Returns the import block of code: standard library, third party, then the package.

    used are the modules code refers to, aliases the private names of those
    a name of the file would shadow.
    """
    names = {name for name in _FROM if re.search(rf"(?<![\w.]){name}\b", code)}

    def line(module: str) -> str:
        alias = aliases.get(module)
        return f"import {module}" + (f" as {alias}" if alias else "")

    def from_lines(modules: set[str]) -> list[str]:
        lines = []
        for module in sorted(modules):
            imported = sorted(n for n in names if _FROM[n] == module)
            lines.append(f"from {module} import {', '.join(imported)}")
        return lines

    def is_stdlib(module: str) -> bool:
        return module.split(".", 1)[0] in sys.stdlib_module_names

    std_from = {_FROM[n] for n in names if not _FROM[n].startswith("psycopg")}
    third_from = {_FROM[n] for n in names if _FROM[n].startswith("psycopg")}
    std = sorted(line(m) for m in used if is_stdlib(m)) + from_lines(std_from)
    third = sorted(
        (line(m) for m in used if not is_stdlib(m)), key=lambda s: s.split(" ")[1]
    ) + from_lines(third_from)
    loc: list[str] = []
    if uses_models:
        loc.append("from . import models" + (" as _models" if "models" in aliases else ""))
    if local and re.search(r"(?<![\w.])JSONValue\b", code):
        loc.append("from .models import JSONValue")
    imports: list[str] = []
    for group in (std, third, loc):
        if group:
            if imports:
                imports.append("")
            imports.extend(group)
    return imports


def assemble(
    head: list[str],
    body: list[str],
    text: Text,
    taken: set[str],
    extra_modules: tuple[str, ...] = (),
    local: bool = True,
) -> str:
    """Returns the module: head (comments and docstring), the imports, then body.

    taken holds the names the module binds or uses as fields, parameters and
    methods; extra_modules are modules of overridden types. local tells
    whether the module may import its package's models.
    """
    code = "\n".join(body)
    all_modules = [*STDLIB, *THIRD_PARTY, *sorted(set(extra_modules) - set(STDLIB))]
    used = _refs(code, all_modules)
    uses_models = local and bool(_refs(code, ["models"]))
    aliases: dict[str, str] = {}
    for module in sorted(used | ({"models"} if uses_models else set())):
        if module.split(".", 1)[0] in taken or module in taken:
            aliases[module] = "_" + module.replace(".", "_")
    if aliases:
        pattern = "|".join(re.escape(m) for m in sorted(aliases, key=len, reverse=True))
        code = re.sub(rf"(?<![\w.])({pattern})\.", lambda m: aliases[m.group(1)] + ".", code)
    imports = _imports(code, used, aliases, uses_models, local)
    lines = list(head)
    if imports:
        lines += ["", *imports]
        if code.strip():
            lines.append(code)
    elif code.strip():
        lines += ["", code.lstrip("\n")]
    return text.restore("\n".join(lines) + "\n")
