"""The one path every enqueue takes: its trace, its write, and the runners' wake-up.

A kind builds the jobs and the write that stores them (``Kind._create``);
``store_jobs`` runs that write inside the enqueue's trace, so the jobs carry
the trace's traceparent and the enqueued count is kept, then wakes this
process's runners. ``Kind.enqueue`` and its relatives, and the Django
backend, all come here.
"""

import datetime
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from jobtable._engines.base import Queries
from jobtable._engines.rows import NewJob
from jobtable._store import Store
from jobtable._telemetry import Workflowed, enqueue_trace
from jobtable._transaction import adriver_connection, driver_connection
from jobtable._unique import EnqueueResult, kept_jobs


class Binding(NamedTuple):
    """Where an enqueue's jobs go: a store, under a payload limit (a runner's, or the store's)."""

    store: Store
    max_payload_bytes: int


class Named(NamedTuple):
    """The ids and the enqueue time an enqueue's jobs take, given before it runs."""

    ids: Sequence[str]
    at: datetime.datetime


def binding_of(
    where: str, verb: str, args: tuple[object, ...], bound: Binding | None
) -> tuple[Binding, Any]:
    """The store and limit of a kind's call with args, and its one other argument.

    args is (store, value), or (value,) for a kind bound to a runner (bound);
    anything else raises TypeError saying what the call takes.
    """
    if len(args) == 2:
        store, value = args
        if not isinstance(store, Store):
            raise TypeError(f"{where}: want a Store first, got {type(store).__name__}")
        return Binding(store, store.max_payload_bytes), value
    if len(args) != 1:
        raise TypeError(f"{where}: takes (store, ...), got {len(args)} arguments")
    if bound is None:
        raise TypeError(
            f"{where}: the kind is not bound to a runner; "
            f"pass the store first: kind.{verb}(store, ...)"
        )
    return bound, args[0]


Stored = tuple[list[NewJob], list[EnqueueResult] | None]
"""What an enqueue stored: its jobs, and its write's results (None: every job stored)."""

Create = Callable[
    [str | None], tuple[list[NewJob], Callable[[Queries], list[EnqueueResult] | None]]
]
"""Builds an enqueue's jobs, given the traceparent to store with them, and their write."""


def store_jobs(
    binding: Binding,
    kind: str,
    verb: str,
    create: Create,
    conn: object,
    workflow: Workflowed | None = None,
) -> Stored:
    """Builds the jobs and stores them, in the store's transaction or, given conn, in conn's.

    In conn's transaction, runners learn of the jobs at its commit, from the
    engine (NOTIFY, the WAL watch), not from here. workflow: the workflow
    whose jobs these are (its id and name), for the trace.
    """
    store = binding.store
    with enqueue_trace(store, kind, workflow) as trace:
        jobs, op = create(trace.traceparent)
        if conn is None:
            results = store.engine.write(op)
            store._enqueued()
        else:
            where = f"{verb} {kind!r}"
            results = store.engine.write_in(driver_connection(conn, where), op, where)
        trace.stored(kept_jobs(jobs, results))
        return jobs, results


async def astore_jobs(
    binding: Binding,
    kind: str,
    verb: str,
    create: Create,
    conn: object,
    workflow: Workflowed | None = None,
) -> Stored:
    """The async form of store_jobs."""
    store = binding.store
    with enqueue_trace(store, kind, workflow) as trace:
        jobs, op = create(trace.traceparent)
        if conn is None:
            results = await store.engine.awrite(op)
            store._enqueued()
        else:
            where = f"{verb} {kind!r}"
            driver = await adriver_connection(conn, where)
            results = await store.engine.awrite_in(driver, op, where)
        trace.stored(kept_jobs(jobs, results))
        return jobs, results
