"""Waiting for results: from a job's end in a worker process to the return of its waiter here.

The "wait" section of ``make bench``. A worker process (``bench._child``)
runs the ``waited`` jobs, whose handler returns time.time() as it returns;
this process enqueues each and awaits its result with ``await_result``. A
sample is the time from the handler's return (its outcome's commit follows,
in the worker's next finish statement) to the waiter's return: the
notification (PostgreSQL) or the file watch (SQLite), the check query, and
the hop to the event loop. Each job starts 50 ms after its enqueue, so its
waiter is registered before it ends. Then a thousand waiters at once in this
process: the time from the last of their jobs' ends to the last return, and
the listeners they shared.
"""

import asyncio
import datetime
import random
import time
from collections.abc import Callable

import jobtable
from bench import _db
from bench._jobs import Ping, make_runner
from bench._plan import DEADLINE, Plan, Results, log
from bench._processes import Child, spawn_workers
from bench._stats import Figure, Table, cell, percentile
from jobtable._wait.waiters import waiters_of

MANY = 1000
"""How many waiters wait at once in the second measurement."""


def _later(seconds: float) -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds)


async def _one_by_one(kind: jobtable.Kind[Ping, float], count: int) -> list[float]:
    samples = []
    rng = random.Random(11)
    for _ in range(count):
        job_id = await kind.aenqueue(Ping(), run_at=_later(0.05))
        ended = await kind.await_result(job_id, timeout=DEADLINE)
        samples.append((time.time() - ended) * 1000)
        await asyncio.sleep(rng.uniform(0.001, 0.005))
    return samples


async def _many(store: jobtable.Store, kind: jobtable.Kind[Ping, float]) -> tuple[float, int]:
    """Milliseconds from the last job's end to the last waiter's return; the listeners used."""
    ids = await kind.aenqueue_many([Ping()] * MANY, run_at=_later(3.0))
    returns: list[float] = []

    async def wait(job_id: str) -> float:
        ended = await kind.await_result(job_id, timeout=DEADLINE)
        returns.append(time.time())
        return ended

    tasks = [asyncio.create_task(wait(i)) for i in ids]
    waiters = waiters_of(store, store.engine)
    # Nothing tells when the last wait has registered: the registry is read every 10 ms.
    while len(waiters) < MANY:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    listeners = len(getattr(store.engine, "_listeners", ())) or len(
        getattr(store.engine, "_watchers", ())
    )
    ended = await asyncio.gather(*tasks)
    return (max(returns) - max(ended)) * 1000, listeners


def _run(db: _db.Database, plan: Plan, results: Results) -> None:
    (child,) = spawn_workers(db, 1, workers=8)
    try:
        child.expect("ready")
        child.send("go")
        child.expect("started")
        kinds = make_runner(db.store, workers=1, name="bench-waiter")
        samples = asyncio.run(_one_by_one(kinds.waited, plan.latency_jobs))
        results.add("wait.cross.p50", percentile(samples, 50), "ms")
        results.add("wait.cross.p90", percentile(samples, 90), "ms")
        results.add("wait.cross.p99", percentile(samples, 99), "ms")
        last, listeners = asyncio.run(_many(db.store, kinds.waited))
        results.add("wait.many.last", last, "ms")
        results.add("wait.many.listeners", listeners, "")
    finally:
        Child.finish(child)
        db.reset()


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: one waiter at a time, then a thousand at once, plan.repeat times."""
    log(f"waiting for results: {plan.latency_jobs} one by one, then {MANY} at once")
    for _ in range(plan.repeat):
        _run(db, plan, results)


_WOKEN = {"sqlite": "woken by inotify on the WAL", "postgres": "woken by the outcome's NOTIFY"}
"""How a waiter learns that its job ended, by engine."""


def add_rows(table: Table, engine: str, g: Callable[[str], Figure | None]) -> None:
    """The section's rows: the waiter's latency, then the thousand waiters (no raw limit)."""
    for q in ("p50", "p90", "p99"):
        note = f"worker in another process; {_WOKEN[engine]}"
        table.add(f"job end to waiter's return {q}", cell(g(f"wait.cross.{q}")), "-", "-", note)
    many = f"{MANY} waiters in one process"
    table.add(
        f"last job end to last return, {many}",
        cell(g("wait.many.last")),
        "-",
        "-",
        f"listeners they shared: {cell(g('wait.many.listeners'))}",
    )
