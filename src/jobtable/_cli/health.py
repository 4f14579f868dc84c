"""``jobtable health``: a probe for orchestrators, exit status 0 when ready and 1 when not."""

import datetime
from typing import Annotated

import typer

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    age,
    app,
    emit,
    opened_store,
    parse_duration,
)
from jobtable._operator.dashboard import Health, QueueAlarm
from jobtable._operator.models import RunnerInfo

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
