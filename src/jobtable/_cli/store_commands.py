"""The store as a whole: ``stats``, ``runners``, ``prune``, ``migrate``, ``health``, ``grant``, keys

``jobtable health`` is a probe for orchestrators, exit status 0 when ready
and 1 when not; ``jobtable grant`` prints the rights a role needs to use a
PostgreSQL store it does not own; ``jobtable secrets new-key`` and
``rotate`` manage the keys that encrypt secrets in payloads.
"""

import datetime
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
from jobtable._operator.dashboard import Health, QueueAlarm
from jobtable._operator.models import RunnerInfo, SchemaState, Stats
from jobtable._secrets import new_key
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


_ALARMS = {
    QueueAlarm.NO_LIVE_RUNNER: "no runner is alive",
    QueueAlarm.NOT_SERVED: "live runners hold none of its jobs",
}


@app.command("health")
def health(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    runner: Annotated[
        str | None,
        typer.Option(
            "--runner",
            show_default=False,
            help="Check only this runner (its name): registered, heartbeat within the lease.",
        ),
    ] = None,
    max_wait: Annotated[
        str | None,
        typer.Option(
            "--max-wait",
            show_default=False,
            help="Also unhealthy when a queue's oldest due job waited longer: 5m, 1h.",
        ),
    ] = None,
    lease: Annotated[
        float, typer.Option(help="Seconds after its last heartbeat a runner counts as dead.")
    ] = 30.0,
    as_json: JsonOption = False,
) -> None:
    """Exits 0 when the runners claim, 1 (printing why) when they may not.

    With --runner (a readiness probe for one process): that runner is
    registered and its heartbeat, which runs in the runner's event loop
    beside its claims, is within the lease. Without it: every queue with
    jobs due has a live runner that serves it. --max-wait adds, either
    way, that no queue's oldest due job waited longer than that.
    """
    wait_limit = parse_duration(max_wait, "--max-wait") if max_wait else None
    with opened_store(store, pooled, listen_url) as opened:
        found = opened.health(lease=lease)
        runners = opened.runners(lease=lease) if runner is not None else []
    problems = _runner_problems(runner, runners) if runner is not None else _alarms(found)
    if wait_limit is not None:
        problems += _waited_too_long(found, wait_limit)
    report = {"healthy": not problems, "problems": problems, "health": found}
    emit(report, as_json, lambda: "\n".join(problems) or _healthy(found, runner))
    if problems:
        raise typer.Exit(1)


def _runner_problems(name: str, runners: list[RunnerInfo]) -> list[str]:
    found = [r for r in runners if r.name == name]
    if not found:
        return [f"runner {name}: not registered (not started, stopped, or long dead)"]
    if not found[0].alive:
        return [f"runner {name}: no heartbeat within the lease; its jobs will be interrupted"]
    return []


def _alarms(found: Health) -> list[str]:
    return [
        f"queue {q.queue}: {q.due} due job(s), the oldest due for "
        f"{age(found.at - q.oldest_due_at)}, and {_ALARMS[q.alarm]}"
        for q in found.queues
        if q.alarm is not None
    ]


def _waited_too_long(found: Health, limit: datetime.timedelta) -> list[str]:
    return [
        f"queue {q.queue}: its oldest due job waited {age(found.at - q.oldest_due_at)}, "
        f"over --max-wait {age(limit)}"
        for q in found.queues
        if found.at - q.oldest_due_at > limit
    ]


def _healthy(found: Health, runner: str | None) -> str:
    if runner is not None:
        return f"healthy: runner {runner} is alive"
    return f"healthy: {len(found.live_runners)} live runner(s), no queue left unserved"


@app.command("grant")
def grant(
    role: Annotated[
        str, typer.Argument(help="The role that runs runners, web processes and the dashboard.")
    ],
    store: StoreOption = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Run the statements as the store's user (the schema's owner)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Prints the SQL that gives ROLE DML rights on the store's tables, and nothing more.

    USAGE on the schema, SELECT, INSERT, UPDATE and DELETE on jobtable's
    tables, EXECUTE on its functions: no right to create, alter or analyze
    anything, which stays with the owner that runs `jobtable migrate`. With
    --apply, runs them too, as the store's user. Run it again after every
    migrate that upgraded the schema.
    """
    if not store:
        fail("no store: give --store URL or set JOBTABLE_STORE")
    with reporting(store):
        statements = Store.grant(store, role) if apply else Store.grants(store, role)
    emit(
        {"role": role, "applied": apply, "statements": statements},
        as_json,
        lambda: "\n".join(f"{statement};" for statement in statements),
    )
    if not as_json:
        # On stderr, as an SQL comment: stdout stays SQL a DBA may pipe to psql.
        done = "ran" if apply else "printed only, not run (add --apply to run them)"
        typer.echo(f"-- {done}: {len(statements)} statements granting to {role}", err=True)


secrets = typer.Typer(
    help="Make a secret key; re-encrypt stored secrets under the current one.",
    no_args_is_help=True,
)
"""The ``jobtable secrets`` group."""
app.add_typer(secrets, name="secrets")


@secrets.command("new-key")
def new_secret_key(
    key_id: Annotated[
        str, typer.Argument(help="The key's id: 1 to 32 of A-Z a-z 0-9 _ . -", show_default=False)
    ],
) -> None:
    """Prints a new random key as JOBTABLE_SECRET_KEYS takes it: ID:BASE64.

    Put it first in JOBTABLE_SECRET_KEYS (comma-separated), keep the old keys
    after it, then run `jobtable secrets rotate`.
    """
    with reporting(None):
        typer.echo(new_key(key_id))


@secrets.command("rotate")
def rotate(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-encrypts every stored secret under the first key of JOBTABLE_SECRET_KEYS.

    Afterwards no stored job needs the keys after the first, which can be dropped.
    """
    with opened_store(store, pooled, listen_url) as opened:
        count = opened.rotate_secrets()
        current = opened.secret_keys.current if opened.secret_keys else ""
    emit(
        {"resealed": count, "key": current},
        as_json,
        lambda: f"re-encrypted the secrets of {count} job(s) under key {current!r}",
    )
