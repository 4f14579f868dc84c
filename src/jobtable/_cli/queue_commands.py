"""``jobtable queues …``: list queues, pause and resume them, set and clear their limits.

Each command calls the Store's queue operations (``pause``, ``resume``,
``set_limits``, ``clear_limits``, ``queues``) and prints the queue as it is
afterwards. The Store stores a pause or limits for any queue name, one
without jobs too (so a queue can be paused before its first job), so these
commands do the same, with a note on stderr naming the queues that exist,
in case the name was mistyped; ``resume`` then drops the row of such a
name, which holds nothing any more. ``clear`` of a queue that has no flow
control stored is an error, as it would change nothing.
"""

from typing import Annotated

import typer
from rich.table import Table

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    emit,
    fail,
    new_table,
    opened_store,
    queues,
)
from jobtable._operator import flow_text
from jobtable._operator.queues import QueueInfo
from jobtable._store import Store

QueueArgument = Annotated[str, typer.Argument(help="The queue's name.", show_default=False)]


def _table(found: list[QueueInfo]) -> Table:
    shown = new_table(
        "queue",
        "paused",
        "concurrency",
        "partition limit",
        "rate",
        "limits by",
        "queued",
        "running",
    )
    for queue in found:
        shown.add_row(
            queue.name,
            "PAUSED" if queue.paused else "no",
            "-" if queue.concurrency is None else str(queue.concurrency),
            "-" if queue.partition_limit is None else str(queue.partition_limit),
            flow_text.rate_text(queue),
            flow_text.limits_by(queue),
            str(queue.queued),
            str(queue.running),
        )
    return shown


@queues.command("list")
def list_queues(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Lists every queue with flow control or jobs: its pause, limits, and jobs queued and running.

    ``limits by`` says whose limits the claims obey: an operator's (``set``),
    the code's declaration (``Runner(flow=...)``), or none (``-``).
    """
    with opened_store(store, pooled, listen_url) as opened:
        found = _every(opened)
    emit(found, as_json, lambda: _table(found), empty="no queues: no jobs and no flow control")


def _every(store: Store) -> list[QueueInfo]:
    return flow_text.every_queue(store.queues(), store.queue_names())


def _find(store: Store, name: str) -> QueueInfo | None:
    return next((queue for queue in _every(store) if queue.name == name), None)


def _note_unknown(store: Store, name: str) -> None:
    """Says on stderr that name is no queue yet, and which queues there are."""
    if _find(store, name) is not None:
        return
    others = ", ".join(repr(queue.name) for queue in _every(store)) or "none"
    typer.echo(
        f"jobtable: note: queue {name!r} had no jobs and no flow control; it is stored "
        f"and applies to the jobs enqueued to it (queues there are: {others}); "
        f"if the name is mistyped, 'jobtable queues resume {name}' drops it",
        err=True,
    )


def _changed(store: Store, name: str, as_json: bool, done: str) -> None:
    # A resumed queue that holds nothing else (no jobs, no limits) has no row left.
    queue = _find(store, name) or flow_text.every_queue([], [name])[0]
    emit(queue, as_json, lambda: f"{done}\n{_line(queue)}")


def _line(queue: QueueInfo) -> str:
    limits = (
        f"concurrency {queue.concurrency or '-'}, partition limit {queue.partition_limit or '-'}, "
        f"rate {flow_text.rate_text(queue)}, limits by {flow_text.limits_by(queue)}"
    )
    paused = "paused" if queue.paused else "not paused"
    return f"{queue.name!r}: {paused}; {limits}; {queue.queued} queued, {queue.running} running"


@queues.command("pause")
def pause(
    queue: QueueArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Pauses a queue: no runner starts its jobs until resumed; running ones finish."""
    _pause(store, pooled, listen_url, queue, as_json, paused=True)


@queues.command("resume")
def resume(
    queue: QueueArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Resumes a paused queue: every runner claims its jobs again."""
    _pause(store, pooled, listen_url, queue, as_json, paused=False)


def _pause(
    url: str | None,
    pooled: bool,
    listen_url: str | None,
    queue: str,
    as_json: bool,
    *,
    paused: bool,
) -> None:
    with opened_store(url, pooled, listen_url) as opened:
        _note_unknown(opened, queue)
        (opened.pause if paused else opened.resume)(queue)
        _changed(opened, queue, as_json, f"{'paused' if paused else 'resumed'} queue {queue!r}")


@queues.command("set")
def set_limits(
    queue: QueueArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    concurrency: Annotated[
        str | None,
        typer.Option(help="At most this many jobs of the queue run at once, on every runner."),
    ] = None,
    partition_limit: Annotated[
        str | None,
        typer.Option(help="At most this many jobs of one partition key run at once."),
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(help="At most LIMIT/PERIOD starts, such as 60/1m, 5/1s or 1000/1h."),
    ] = None,
    rate_per_key: Annotated[
        bool, typer.Option("--rate-per-key", help="Count the rate per partition key.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Sets a queue's limits as an operator, replacing the three; an option not given is no limit.

    They win over the code's declaration until ``jobtable queues clear``;
    runners apply them at their next claim, without a restart.
    """
    given = {"--concurrency": concurrency, "--partition-limit": partition_limit, "--rate": rate}
    if all(text is None for text in given.values()):
        fail("give --concurrency, --partition-limit or --rate (clear: back to the code's limits)")
    for option, text in given.items():
        if text is not None and not text.strip():
            fail(f"{option} '': give a value, or leave the option out for no limit")
    try:
        most = flow_text.parse_limit("--concurrency", concurrency or "")
        per_key = flow_text.parse_limit("--partition-limit", partition_limit or "")
        starts = flow_text.parse_rate("--rate", rate or "", rate_per_key)
    except ValueError as err:
        fail(str(err))
    with opened_store(store, pooled, listen_url) as opened:
        _note_unknown(opened, queue)
        opened.set_limits(queue, concurrency=most, partition_limit=per_key, rate=starts)
        _changed(opened, queue, as_json, f"set the limits of queue {queue!r}")


@queues.command("clear")
def clear(
    queue: QueueArgument,
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Drops an operator's limits of a queue: the code's latest declaration applies again."""
    with opened_store(store, pooled, listen_url) as opened:
        found = _find(opened, queue)
        if found is None:
            names = ", ".join(repr(q.name) for q in _every(opened)) or "none"
            fail(f"no queue {queue!r}: nothing to clear (queues there are: {names})")
        opened.clear_limits(queue)
        done = f"cleared the operator's limits of queue {queue!r}: the code's limits apply"
        if not found.overridden:
            done = f"queue {queue!r} had no operator's limits: nothing changed"
        _changed(opened, queue, as_json, done)
