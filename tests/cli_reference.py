"""The reference page of the ``jobtable`` command, written from the command's own definitions.

``render()`` is the page: every command, its help, and a table of its
arguments and options with their help and defaults, read from the Typer
application. tests/test_docs_layout.py fails while docs/reference/cli.md
differs from it; ``.venv/bin/python tests/cli_reference.py`` rewrites the
page.
"""

import pathlib
from collections.abc import Iterator
from typing import Any

import typer.main

from jobtable._cli import COMMAND_MODULES
from jobtable._cli.app import app

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"

_HEAD = """\
# The `jobtable` command

Every command, its arguments and options, as `jobtable COMMAND --help` shows
them. The [guide](../guides/operating/cli.md) says what the commands are for
and what they guarantee. An option with an environment variable reads it
when the option is not given; `jobtable --store URL COMMAND` gives the store
before the command (a command's own `--store` wins).

<!-- Written by tests/cli_reference.py from the command's definitions; a test
     fails while it differs: run `.venv/bin/python tests/cli_reference.py`. -->
"""


def _commands(command: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
    """Every command under command, as (its full name, its click command), in name order."""
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        yield " ".join(path), command
        return
    for name, sub in sorted(subcommands.items()):
        yield from _commands(sub, [*path, name])


def _cell(text: str) -> str:
    """text on one line, safe in a table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _row(param: Any) -> str:
    """The table row of one argument or option."""
    if type(param).__name__.endswith("Argument"):
        name = f"`{param.name.upper()}`" + (" ..." if param.nargs == -1 else "")
    else:
        name = ", ".join(f"`{opt}`" for opt in param.opts)
    default = "required" if param.required else ""
    if not param.required and param.default not in (None, False, (), "") and param.show_default:
        default = f"`{param.default}`"
    text = _cell(param.help or "")
    if getattr(param, "envvar", None):
        text += f" Also `{param.envvar}`."
    return f"| {name} | {text} | {default} |"


def render() -> str:
    """The page, as docs/reference/cli.md must hold it."""
    assert COMMAND_MODULES, "importing them adds their commands to app"
    root = typer.main.get_command(app)
    parts = [_HEAD]
    commands: list[tuple[str, Any]] = [("jobtable", root)]
    commands.extend(_commands(root, ["jobtable"]))
    for name, command in commands:
        parts.append(f"## `{name}`\n")
        summary = (command.help or "").split("\n\n", 1)[0]
        parts.append(" ".join(summary.split()) + "\n")
        params = [p for p in command.params if p.name != "help"]
        if params:
            parts.append("| argument or option | what it is | default |\n|---|---|---|")
            parts.append("\n".join(_row(param) for param in params) + "\n")
    return "\n".join(parts)


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
