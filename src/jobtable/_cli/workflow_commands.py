"""The ``jobtable workflows`` commands: list workflows, show one's jobs, cancel one."""

from typing import Annotated

import typer
from rich.table import Table

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    app,
    emit,
    fail,
    new_table,
    opened_store,
    when,
)
from jobtable._cli.job_commands import IDS_MAY_START_WITH_A_DASH
from jobtable._errors import JobNotFound
from jobtable._job import Status

workflows = typer.Typer(help="Operate workflows: jobs with dependencies.", no_args_is_help=True)
"""The ``jobtable workflows`` group."""
app.add_typer(workflows, name="workflows")

WorkflowIdArgument = Annotated[str, typer.Argument(help="The workflow's id.", show_default=False)]


@workflows.command("list")
def list_workflows(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    name: Annotated[str | None, typer.Option(help="Only workflows of this name.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many workflows (1 to 1000).")] = 20,
    before: Annotated[
        str | None,
        typer.Option(help="Only workflows created before this one (its id): the next page."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Lists workflows, newest first, each with its state and its jobs counted by status.

    The state is running while a job is pending, queued or running; then
    failed if a job failed, cancelled if one was cancelled, else finished.
    A full page ends with the option that shows the next one (``more:
    --before ID``).
    """
    with opened_store(store, pooled, listen_url) as opened:
        found = opened.workflows(name=name, before=before, limit=limit)
        more = len(found) == limit and bool(
            opened.workflows(before=found[-1].id, name=name, limit=1)
        )

    def table() -> Table:
        shown = new_table("id", "name", "created", "state", "jobs")
        for w in found:
            counts = ", ".join(f"{s.value} {n}" for s, n in w.counts.items() if n)
            shown.add_row(w.id, w.name, when(w.created_at), w.state, counts or "-")
        return shown

    emit(found, as_json, table, empty="no workflows match")
    if more and not as_json:
        typer.echo(f"more: --before {found[-1].id}")


@workflows.command("show", context_settings=IDS_MAY_START_WITH_A_DASH)
def show_workflow(
    workflow_id: WorkflowIdArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Shows a workflow's jobs in enqueue order: each one's kind, status and dependencies."""
    with opened_store(store, pooled, listen_url) as opened:
        try:
            graph = opened.workflow(workflow_id)
        except JobNotFound as err:
            fail(str(err))
    number = {node.id: n for n, node in enumerate(graph.jobs, start=1)}

    def table() -> Table:
        counts = {status: 0 for status in Status}
        for node in graph.jobs:
            counts[node.status] += 1
        summary = ", ".join(f"{s.value} {n}" for s, n in counts.items() if n) or "no jobs left"
        shown = new_table("#", "id", "kind", "status", "after", title=f"{graph.name}: {summary}")
        for node in graph.jobs:
            after = " ".join(f"#{number[d]}" if d in number else d for d in node.dependencies)
            shown.add_row(str(number[node.id]), node.id, node.kind, node.status.value, after or "-")
        return shown

    emit(graph, as_json, table)


@workflows.command("cancel", context_settings=IDS_MAY_START_WITH_A_DASH)
def cancel_workflow(
    workflow_id: WorkflowIdArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancels every unfinished job of a workflow: pending and queued ones at once, running ones
    through their runners."""
    with opened_store(store, pooled, listen_url) as opened:
        try:
            count = opened.cancel_workflow(workflow_id)
        except JobNotFound as err:
            fail(str(err))
    emit({"cancelled": count}, as_json, lambda: f"cancelled {count} job(s)")
