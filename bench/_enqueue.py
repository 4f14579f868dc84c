"""Enqueue and claim through the library, one call at a time, beside raw inserts.

The "enqueue" section of ``make bench``: one caller's enqueue and
enqueue_many against the raw one-insert and hundred-insert transactions,
then one job a call from 8 and 32 threads and from 32 asyncio tasks at
once. ``claim_single`` (one claim an engine write) serves the "finished
rows" section.
"""

import asyncio
import time
from typing import Any

import jobtable
from bench import _db
from bench._jobs import Ping, make_runner
from bench._plan import PAYLOADS, Plan, Results, log

CONCURRENT_THREADS = (8, 32)
"""Thread counts of the concurrent-enqueuer figures."""
CONCURRENT_TASKS = 32
"""Asyncio tasks of the concurrent-enqueuer figure."""
CONCURRENT = [
    *((f"enq.threads{n}", f"{n} threads at once") for n in CONCURRENT_THREADS),
    (f"enq.tasks{CONCURRENT_TASKS}", f"{CONCURRENT_TASKS} async tasks at once"),
]
"""The concurrent-enqueuer figures: key and label."""


def enqueue_single(store: jobtable.Store, count: int) -> float:
    """Seconds for count enqueue calls of one no-op job each, from one caller."""
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    enqueue = kinds.noop.enqueue
    payload = Ping()
    begin = time.perf_counter()
    for _ in range(count):
        enqueue(payload)
    return time.perf_counter() - begin


def enqueue_batched(store: jobtable.Store, count: int) -> float:
    """Seconds to enqueue count no-op jobs 100 an enqueue_many call."""
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    begin = time.perf_counter()
    for _ in range(count // _db.BATCH):
        kinds.noop.enqueue_many(PAYLOADS)
    return time.perf_counter() - begin


def enqueue_threads(store: jobtable.Store, count: int, threads: int) -> float:
    """Seconds for count enqueues, one job a call, from threads threads at once.

    This is how a web app enqueues: each request in a thread of its own.
    Returns the time for the count actually enqueued (a multiple of threads).
    """
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    enqueue = kinds.noop.enqueue
    payload = Ping()

    def work(share: int) -> None:
        for _ in range(share):
            enqueue(payload)

    return (
        _db.run_threads(threads, lambda _, share: work(share), count)
        * count
        / (count // threads * threads)
    )


async def _enqueue_tasks(kinds: Any, count: int, tasks: int) -> float:
    payload = Ping()
    share = count // tasks

    async def work() -> None:
        for _ in range(share):
            await kinds.noop.aenqueue(payload)

    begin = time.perf_counter()
    await asyncio.gather(*(work() for _ in range(tasks)))
    return (time.perf_counter() - begin) * count / (share * tasks)


def enqueue_tasks(store: jobtable.Store, count: int, tasks: int) -> float:
    """Seconds for count aenqueue calls, one job each, from tasks asyncio tasks at once."""
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    return asyncio.run(_enqueue_tasks(kinds, count, tasks))


def claim_single(store: jobtable.Store, count: int) -> float:
    """Seconds for count claims of one job each, each its own engine.write; jobs enqueued first."""
    enqueue_batched(store, count)
    write = store.engine.write
    begin = time.perf_counter()
    for _ in range(count):
        write(
            lambda q: q.finish_and_claim_jobs(
                outcomes=[],
                queue="default",
                runner="bench",
                now=_db.utc_text(),
                max_jobs=1,
            )[1]
        )
    return time.perf_counter() - begin


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: one caller beside the raw inserts, then the concurrent enqueuers."""
    store = db.store
    log("enqueue and enqueue_many against raw inserts")
    single = plan.single_calls
    batched = plan.batched_jobs
    for _ in range(plan.repeat):
        results.add("enq.single", single / enqueue_single(store, single), "jobs/s")
        db.reset()
        results.add("raw.insert1", single / db.raw_insert(single, 1), "jobs/s")
        db.reset()
        results.add("enq.many", batched / enqueue_batched(store, batched), "jobs/s")
        db.reset()
        results.add("raw.insert100", batched / db.raw_insert(batched, _db.BATCH), "jobs/s")
        db.reset()
    log("concurrent enqueuers: 8 and 32 threads, 32 async tasks, one job a call")
    many = plan.concurrent_calls
    for _ in range(plan.repeat):
        for threads in CONCURRENT_THREADS:
            rate = many / enqueue_threads(store, many, threads)
            results.add(f"enq.threads{threads}", rate, "jobs/s")
            db.reset()
        results.add(
            f"enq.tasks{CONCURRENT_TASKS}",
            many / enqueue_tasks(store, many, CONCURRENT_TASKS),
            "jobs/s",
        )
        db.reset()
