"""Every ``jobtable`` command that opens a store takes the options a pooled deploy sets.

A deploy behind PgBouncer sets JOBTABLE_STORE, JOBTABLE_POOLED and
JOBTABLE_LISTEN_URL once for every process; a command that read the first
but not the others would open the pooled URL as a direct one. Read from the
Typer application itself, so a command added later is checked too.
"""

from typing import Any

import typer.main
from cli_reference import _commands

from jobtable._cli import COMMAND_MODULES
from jobtable._cli.app import app

OWNER_ONLY = {"jobtable grant"}
"""Commands run as the schema's owner on a direct URL, as the deployment guide says."""


def options(command: Any) -> set[str]:
    """The long option names command takes."""
    return {name for param in command.params for name in getattr(param, "opts", [])}


def test_every_command_with_a_store_takes_pooled_and_listen_url() -> None:
    assert COMMAND_MODULES
    commands = dict(_commands(typer.main.get_command(app), ["jobtable"]))
    with_store = {name for name, command in commands.items() if "--store" in options(command)}
    assert {"jobtable health", "jobtable signal", "jobtable stats"} <= with_store
    missing = {
        name
        for name in with_store - OWNER_ONLY
        if not {"--pooled", "--listen-url"} <= options(commands[name])
    }
    assert missing == set()
