"""``jobtable stats``, ``runners``, ``prune`` and ``migrate``: the queue as a whole."""

from typing import Annotated

import typer
from rich.table import Table

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    age,
    app,
    emit,
    fail,
    new_table,
    opened_store,
    parse_duration,
    reporting,
    when,
)
from jobtable._job import Status
from jobtable._operator.models import RunnerInfo, SchemaState, Stats
from jobtable._store import Store


@app.command("stats")
def stats(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Shows each queue's job counts, how long its oldest due job waited, how many are for later."""
    with opened_store(store, pooled, listen_url) as opened:
        found = opened.stats()
    emit(found, as_json, lambda: _stats_table(found) if found.queues else "no jobs")


def _stats_table(found: Stats) -> Table:
    shown = new_table("queue", *(s.value for s in Status), "oldest due", "scheduled later")
    for queue in found.queues:
        counts = [str(queue.counts.get(s, 0)) for s in Status]
        shown.add_row(queue.queue, *counts, age(queue.oldest_queued_age), str(queue.scheduled))
    return shown


@app.command("runners")
def runners(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    lease: Annotated[
        float, typer.Option(help="Seconds after its last heartbeat a runner counts as dead.")
    ] = 30.0,
    as_json: JsonOption = False,
) -> None:
    """Lists the registered runners: when they started, their heartbeats, the jobs they hold.

    The queues shown are those of the jobs each holds: the queues a runner
    serves are not recorded, so an idle runner shows none. Missing keys are
    the ids of the secret keys a runner lacked for a job it claimed (it put
    each such job back, its attempt unused), until it restarts.
    """
    with opened_store(store, pooled, listen_url) as opened:
        found = opened.runners(lease=lease)
        at = opened.clock()

    def table() -> Table:
        shown = new_table(
            "name", "started", "heartbeat", "alive", "jobs", "their queues", "missing keys"
        )
        for runner in found:
            shown.add_row(
                runner.name,
                when(runner.started_at),
                f"{age(at - runner.heartbeat_at)} ago",
                "yes" if runner.alive else "NO",
                _held(runner),
                ", ".join(runner.queues) or "-",
                ", ".join(runner.missing_keys) or "-",
            )
        return shown

    emit(found, as_json, table, empty="no runners registered")


def _held(runner: RunnerInfo) -> str:
    return ", ".join(runner.jobs) if runner.jobs else "-"


@app.command("prune")
def prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than", help="Delete jobs that finished longer ago than this: 7d, 12h, 30m."
        ),
    ],
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deletes the jobs that succeeded, failed or were cancelled longer ago than --older-than."""
    delta = parse_duration(older_than, "--older-than")
    with opened_store(store, pooled, listen_url) as opened:
        deleted = opened.prune(delta)
    emit({"deleted": deleted}, as_json, lambda: f"deleted {deleted} finished job(s)")


@app.command("migrate")
def migrate(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only tell; exit 1 when an upgrade is pending.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Creates or upgrades the store's schema, for deploys that open stores with migrate=False."""
    if not store:
        fail("no store: give --store URL or set JOBTABLE_STORE")
    with reporting(store):
        found = Store.schema_state(store) if check else Store.migrate(store, pooled=pooled)
    emit(found, as_json, lambda: _migrated(found, check))
    if check and found.pending:
        raise typer.Exit(1)


def _migrated(found: SchemaState, check: bool) -> str:
    if check:
        if not found.pending:
            return f"schema is at version {found.version}, the latest: nothing to do"
        if found.version == 0:
            return f"no schema yet: `jobtable migrate` creates version {found.latest}"
        return f"schema at version {found.version}: `jobtable migrate` upgrades to {found.latest}"
    if not found.pending:
        return f"schema already at version {found.latest}: nothing to do"
    if found.version == 0:
        return f"created the schema at version {found.latest}"
    return f"upgraded the schema from version {found.version} to {found.latest}"
