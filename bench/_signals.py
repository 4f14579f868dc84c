"""Signal delivery: from ``Store.signal`` here to the waiting job's resume in a worker process.

The "signals" section of ``make bench``. A worker process (``bench._child``,
polling every second) runs the ``signalled`` jobs, whose handler waits for
the signal ``bench-go`` under its own id and, resumed, returns the time
since the signal was sent. This process enqueues each job, waits until it
is back in the table waiting, sends the signal and reads the result. A
sample is the signal's send to the handler's resume: the signal's commit,
the wake-up (PostgreSQL's NOTIFY, SQLite's file watch), the claim and the
handler's replay up to its wait.
"""

import asyncio
import time
from collections.abc import Callable

import jobtable
from bench import _db
from bench._jobs import GO, Ping, make_runner
from bench._plan import DEADLINE, Plan, Results, log
from bench._processes import Child, spawn_workers
from bench._stats import Figure, Table, cell, percentile


async def _one_by_one(
    store: jobtable.Store, kind: jobtable.Kind[Ping, float], count: int
) -> list[float]:
    samples = []
    for _ in range(count):
        job_id = await kind.aenqueue(Ping())
        while await store.asignal_wait(job_id) is None:  # noqa: ASYNC110 (no event: the store is read)
            await asyncio.sleep(0.005)
        await store.asignal(GO, job_id, Ping(t=time.time()))
        samples.append(await kind.await_result(job_id, timeout=DEADLINE) * 1000)
    return samples


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: plan.latency_jobs signals one at a time, plan.repeat times."""
    log(f"signal delivery: {plan.latency_jobs} signals, one at a time, to another process")
    for _ in range(plan.repeat):
        (child,) = spawn_workers(db, 1, workers=4)
        try:
            child.expect("ready")
            child.send("go")
            child.expect("started")
            kinds = make_runner(db.store, workers=1, name="bench-signaller")
            samples = asyncio.run(_one_by_one(db.store, kinds.signalled, plan.latency_jobs))
            results.add("signal.p50", percentile(samples, 50), "ms")
            results.add("signal.p99", percentile(samples, 99), "ms")
        finally:
            Child.finish(child)
            db.reset()


_WOKEN = {"sqlite": "woken by inotify on the WAL", "postgres": "woken by the signal's NOTIFY"}
"""How the waiting job's runner learns of the signal, by engine."""


def add_rows(table: Table, engine: str, g: Callable[[str], Figure | None]) -> None:
    """The section's rows: send to resume, p50 and p99 (no raw limit)."""
    for q in ("p50", "p99"):
        note = f"job waiting in another process, which polls every 1 s; {_WOKEN[engine]}"
        table.add(f"signal sent to waiting job resumed {q}", cell(g(f"signal.{q}")), "-", "-", note)
