"""``jobtable jobs …``: list, show, cancel, retry and delete jobs; ``jobtable signal`` resumes them.

``jobtable signal NAME KEY --payload JSON`` sends a signal, resuming the
jobs waiting for it.
"""

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated

import pydantic
import typer
from rich.console import Group, RenderableType
from rich.table import Table

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    app,
    console,
    emit,
    fail,
    jobs,
    new_table,
    opened_store,
    parse_status,
    when,
)
from jobtable._errors import JobNotFound
from jobtable._job import JobRecord, JobStep, Status, WorkflowLinks
from jobtable._operator.models import RetryResult
from jobtable._signal import Signal
from jobtable._store import Store

IDS_MAY_START_WITH_A_DASH = {"ignore_unknown_options": True, "help_option_names": ["--help"]}
"""Job ids are URL-safe base64, so one may start with ``-``: taken as an id, not an option.

Only ``--help`` asks for help here: with ``-h`` too, an id such as
``-dash-id`` would read as short options holding ``-h``, and show the help.
"""

SHOWN_BYTES = 4096
"""How much of a payload or a result ``jobtable jobs show`` prints without --full."""


ID_LENGTH = 22
"""How many characters an id jobtable makes has (128 random bits, URL-safe base64)."""

IdsArgument = Annotated[list[str], typer.Argument(help="The ids of the jobs.", show_default=False)]


def _short(value: object, width: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def not_found(job_id: str) -> str:
    """The error for job_id that is no job's, with a hint when it looks like a seq or a cut id."""
    if job_id.isascii() and job_id.isdigit():
        hint = (
            "; it looks like a seq: give the job's id, which `jobtable jobs list` shows beside it"
        )
    elif 0 < len(job_id) < ID_LENGTH:
        hint = f"; cut short? a job id is {ID_LENGTH} characters, this is {len(job_id)}"
    else:
        hint = ""
    return f"job {job_id!r} not found{hint}"


def _known(store: Store, ids: list[str], url: str) -> None:
    """Fails, changing nothing, when any of ids is no job's."""
    for job_id in ids:
        try:
            store.get(job_id)
        except JobNotFound:
            fail(not_found(job_id), url)


@jobs.command("list")
def list_jobs(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    status: Annotated[str | None, typer.Option(help="Only jobs in this status.")] = None,
    kind: Annotated[str | None, typer.Option(help="Only jobs of this kind.")] = None,
    queue: Annotated[str | None, typer.Option(help="Only jobs in this queue.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only jobs with this tag.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many jobs (1 to 1000).")] = 20,
    before: Annotated[
        int | None, typer.Option(help="Only jobs enqueued before this seq: the next page.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Lists jobs, newest first, that match every filter given.

    A full page ends with the option that shows the next one (``more:
    --before SEQ``); the run at column shows when a queued job that waits
    for a later time may run.
    """
    wanted = parse_status(status)
    with opened_store(store, pooled, listen_url) as opened:
        filters = {"status": wanted, "kind": kind, "queue": queue, "tag": tag}
        records = opened.list_jobs(**filters, limit=limit, before=before)
        now = opened.clock()
        more = len(records) == limit and bool(
            opened.list_jobs(**filters, limit=1, before=records[-1].seq)
        )

    def table() -> Table:
        shown = new_table(
            "seq", "id", "kind", "queue", "status", "attempt", "created", "run at", "error"
        )
        for r in records:
            later = r.status is Status.QUEUED and r.run_at > now
            shown.add_row(
                str(r.seq),
                r.id,
                r.kind,
                r.queue,
                r.status.value,
                f"{r.attempt}/{r.max_attempts}",
                when(r.created_at),
                when(r.run_at) if later else "-",
                _short(r.error or ""),
            )
        return shown

    emit(records, as_json, table, empty="no jobs match")
    if more and not as_json:
        typer.echo(f"more: --before {records[-1].seq}")


@jobs.command("show", context_settings=IDS_MAY_START_WITH_A_DASH)
def show_job(
    job_id: Annotated[str, typer.Argument(help="The job's id.", show_default=False)],
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full", help=f"Show the payload and result whole, not cut at {SHOWN_BYTES} bytes."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Shows a job's whole record: payload, result, times, its error history and its steps.

    A payload or result longer than SHOWN_BYTES is cut there, saying how
    long it is, unless --full; --json always holds them whole.
    """
    with opened_store(store, pooled, listen_url) as opened:
        try:
            record = opened.inspect(job_id)
        except JobNotFound:
            fail(not_found(job_id), store)
    if as_json:
        emit(record, True, lambda: "")
        return
    console.print(_record_view(record, None if full else SHOWN_BYTES))


def _cut(value: object, limit: int | None) -> str:
    text = json.dumps(value)
    if limit is None or len(text.encode()) <= limit:
        return text
    kept = text.encode()[:limit].decode(errors="ignore")
    return f"{kept}… ({len(text.encode())} bytes; --full shows all)"


def _record_view(record: JobRecord, limit: int | None) -> Group:
    fields = new_table("field", "value", title=f"job {record.id}")
    for name, value in (
        ("id", record.id),
        ("seq", str(record.seq)),
        ("kind", record.kind),
        ("queue", record.queue),
        ("priority", str(record.priority)),
        ("status", record.status.value),
        ("waiting", "-" if record.waiting is None else f"held back: {record.waiting.text}"),
        ("attempt", f"{record.attempt} of {record.max_attempts}"),
        ("timeout", "-" if record.timeout is None else f"{record.timeout:g}s"),
        ("cancel requested", "yes" if record.cancel_requested else "no"),
        ("runner", record.runner or "-"),
        ("created", when(record.created_at)),
        ("run at", when(record.run_at)),
        ("started", when(record.started_at)),
        ("finished", when(record.finished_at)),
        ("error", record.error or "-"),
        ("tags", ", ".join(record.tags) or "-"),
        ("meta", _cut(record.meta, limit) if record.meta else "-"),
        ("payload", _cut(record.payload, limit)),
        ("result", "-" if record.result is None else _cut(record.result, limit)),
    ):
        fields.add_row(name, value)
    history = new_table("attempt", "at", "error", title="error history")
    for entry in record.errors:
        history.add_row(str(entry.attempt), when(entry.at), entry.error)
    shown: list[RenderableType] = [fields, history if record.errors else "no failed attempts"]
    shown.append(_steps_view(record.steps, limit) if record.steps else "no recorded steps")
    if record.workflow is not None:
        shown.append(_workflow_view(record.workflow))
    return Group(*shown)


def _steps_view(recorded: Sequence[JobStep], limit: int | None) -> Table:
    """A job's recorded steps, one row each, their outputs cut at limit."""
    steps = new_table("step", "attempt", "recorded", "output", title="steps")
    for step in recorded:
        steps.add_row(
            step.name, str(step.attempt), when(step.recorded_at), _cut(step.output, limit)
        )
    return steps


def _workflow_view(links: WorkflowLinks) -> Table:
    """A workflow job's workflow, dependencies and dependents, one row each."""
    shown = new_table("", "id", "kind", "status", title=f"workflow {links.name} ({links.id})")
    for side, linked in (("after", links.dependencies), ("before", links.dependents)):
        for job in linked:
            shown.add_row(side, job.id, job.kind, job.status.value)
    if links.cancelled_because is not None:
        shown.add_row("cancelled", links.cancelled_because, "", "")
    for reason in links.blocked_by:
        shown.add_row("blocked", reason, "", "")
    return shown


@jobs.command("cancel", context_settings=IDS_MAY_START_WITH_A_DASH)
def cancel_jobs(
    ids: IdsArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancels jobs: a queued one at once, a running one through its runner."""
    _on_each(store, pooled, listen_url, ids, as_json, Store.cancel)


@jobs.command("retry", context_settings=IDS_MAY_START_WITH_A_DASH)
def retry_jobs(
    ids: IdsArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queues failed or cancelled jobs again, with fresh attempts; their history is kept.

    A job of a workflow that a failed, cancelled or deleted dependency
    blocks is left as it is: blocked, naming that dependency.
    """
    _on_each(store, pooled, listen_url, ids, as_json, Store.retry, _blocked_by)


def _blocked_by(opened: Store, job_id: str, outcome: StrEnum) -> str | None:
    """What blocks a job whose retry was refused as BLOCKED, read after it; None otherwise."""
    if outcome is not RetryResult.BLOCKED:
        return None
    return "; ".join(opened.inspect(job_id).blocked_by) or None


@jobs.command("retry-failed")
def retry_failed_jobs(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    kind: Annotated[str | None, typer.Option(help="Only failed jobs of this kind.")] = None,
    queue: Annotated[str | None, typer.Option(help="Only failed jobs in this queue.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Queues again every failed job that matches the filters given."""
    with opened_store(store, pooled, listen_url) as opened:
        count = opened.retry_failed(kind=kind, queue=queue)
    emit({"retried": count}, as_json, lambda: f"retried {count} failed job(s)")


@jobs.command("delete", context_settings=IDS_MAY_START_WITH_A_DASH)
def delete_jobs(
    ids: IdsArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deletes jobs that are not running (a running one is kept: cancel it first)."""
    _on_each(store, pooled, listen_url, ids, as_json, Store.delete)


def _on_each(
    url: str | None,
    pooled: bool,
    listen_url: str | None,
    ids: list[str],
    as_json: bool,
    action: Callable[[Store, str], StrEnum],
    why: Callable[[Store, str, StrEnum], str | None] | None = None,
) -> None:
    """Does action to every job of ids once all are known; prints each outcome.

    An id given twice is acted on once: the outcome shown is what the command did.
    why, when given, adds to the table the reason for an outcome (the JSON
    keeps the outcome's value alone).
    """
    ids = list(dict.fromkeys(ids))
    reasons: dict[str, str] = {}
    with opened_store(url, pooled, listen_url) as opened:
        _known(opened, ids, url or "")
        outcomes: dict[str, str] = {}
        for job_id in ids:
            outcome = action(opened, job_id)
            outcomes[job_id] = outcome.value
            if why is not None and (reason := why(opened, job_id, outcome)) is not None:
                reasons[job_id] = reason

    def table() -> Table:
        shown = new_table("id", "outcome")
        for job_id, outcome in outcomes.items():
            reason = reasons.get(job_id)
            shown.add_row(job_id, outcome if reason is None else f"{outcome}: {reason}")
        return shown

    emit(outcomes, as_json, table)


@app.command("signal")
def send_signal(
    name: Annotated[str, typer.Argument(help="The signal's name.", show_default=False)],
    key: Annotated[str, typer.Argument(help="The key the jobs wait on.", show_default=False)],
    payload: Annotated[
        str, typer.Option(help="The payload, as JSON (such as '{\"approved\": true}').")
    ] = "{}",
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sends a signal: every job waiting for NAME under KEY resumes with the payload.

    A job that begins to wait for it later receives it too, while it is kept
    (a week). Prints how many waiting jobs it resumed.
    """
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as err:
        fail(f"--payload is not JSON: {err}; give the payload as JSON text")
    with opened_store(store, pooled, listen_url) as opened:
        try:
            declared = Signal[pydantic.JsonValue](name, pydantic.JsonValue)  # type: ignore[arg-type]
        except (TypeError, ValueError) as err:
            fail(str(err))
        resumed = opened.signal(declared, key, value)
    emit(
        {"signal": name, "key": key, "resumed": resumed},
        as_json,
        lambda: f"sent signal {name!r} under key {key!r}: resumed {resumed} waiting job(s)",
    )
