"""The ``jobtable workflows`` commands: operate a workflow as a whole."""

from typing import Annotated

import typer

from jobtable._cli.app import JsonOption, StoreOption, app, emit, fail, opened_store
from jobtable._errors import JobNotFound

workflows = typer.Typer(help="Operate workflows: jobs with dependencies.", no_args_is_help=True)
"""The ``jobtable workflows`` group."""
app.add_typer(workflows, name="workflows")


@workflows.command("cancel")
def cancel_workflow(
    workflow_id: Annotated[str, typer.Argument(help="The workflow's id.", show_default=False)],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancels every unfinished job of a workflow: pending and queued ones at once, running ones
    through their runners."""
    with opened_store(store) as opened:
        try:
            count = opened.cancel_workflow(workflow_id)
        except JobNotFound as err:
            fail(str(err))
    emit({"cancelled": count}, as_json, lambda: f"cancelled {count} job(s)")
