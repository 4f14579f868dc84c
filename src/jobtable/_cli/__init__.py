"""The ``jobtable`` console script, also ``python -m jobtable``.

Each imported module adds its commands to ``jobtable._cli.app.app``; a new
command is one function in one of them (see ``jobtable._cli.app``), and a
new module of commands is one more name in the import below.
"""

from jobtable._cli import (
    job_commands,
    queue_commands,
    serve_commands,
    store_commands,
    workflow_commands,
)
from jobtable._cli.app import app

COMMAND_MODULES = (
    job_commands,
    queue_commands,
    serve_commands,
    store_commands,
    workflow_commands,
)
"""The modules whose functions are the commands, imported for what they add to app."""


def main() -> None:
    """Runs the command line: what the ``jobtable`` script calls."""
    app(prog_name="jobtable")
