"""The ``jobtable`` console script, also ``python -m jobtable``.

Each imported module adds its commands to ``jobtable._cli_app.app``; a new
command is one function in one of them (see ``jobtable._cli_app``), and a
new module of commands is one more name in the import below.
"""

from jobtable import _cli_dashboard, _cli_jobs, _cli_ops, _cli_worker
from jobtable._cli_app import app

COMMAND_MODULES = (_cli_dashboard, _cli_jobs, _cli_ops, _cli_worker)
"""The modules whose functions are the commands, imported for what they add to app."""


def main() -> None:
    """Runs the command line: what the ``jobtable`` script calls."""
    app(prog_name="jobtable")
