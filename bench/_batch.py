"""Batch kinds against one handler call per job: ``make bench``'s "batch" section.

A runner of 200 workers (twice the batch size, so that one batch gathers
while another runs) drains 10,000 queued jobs of one queue, timed from its
start until no job is queued or running, once per case, the cases
interleaved in each round so that the ratios compare runs made moments
apart:

- single, no-op: a ``Kind`` whose handler returns at once (the baseline);
- batch, no-op: a ``BatchKind`` of size 100, its handler returning at once:
  what gathering jobs into calls costs or saves the runner itself;
- single, a service: each call goes to a service that takes 4 calls at
  once, 5 ms each (a mail API, an embedding model with its concurrency cap);
- batch, a service: the same service, 100 jobs a call.

Each job still has its own claim and outcome, so the table's commit rate
bounds every case; what batching saves is the handler's calls, counted too.
"""

import asyncio
import datetime
from collections.abc import Callable, Sequence

import jobtable
from bench import _db
from bench._end_to_end import drain_seconds
from bench._jobs import Ping
from bench._plan import Plan, Results, log
from bench._stats import Figure, Table, cell, ratio

WORKERS = 200
SIZE = 100
COUNT = 10_000
CALL = 0.005
"""Seconds a call to the service of the "-io" cases takes."""
AT_ONCE = 4
"""How many calls the service of the "-io" cases takes at once."""
CASES = ("single", "batch", "single-io", "batch-io")
LABELS = {
    "single": "one call per job, no-op",
    "batch": f"batches of {SIZE}, no-op",
    "single-io": f"one call per job, a service of {AT_ONCE} calls at once, {CALL * 1000:g} ms each",
    "batch-io": f"batches of {SIZE}, a service of {AT_ONCE} calls at once, {CALL * 1000:g} ms each",
}


def _runner(db: _db.Database, case: str, queue: str, calls: list[int]) -> jobtable.Runner:
    """A runner of WORKERS workers over queue with the case's handler, counting its calls."""
    runner = jobtable.Runner(db.store, queues={queue: WORKERS}, name=f"bench-batch-{case}")
    service = asyncio.Semaphore(AT_ONCE) if case.endswith("-io") else None

    async def call() -> None:
        calls.append(1)
        if service is not None:
            async with service:
                await asyncio.sleep(CALL)

    if case.startswith("batch"):
        every = jobtable.Batch(size=SIZE, max_wait=datetime.timedelta(milliseconds=50))
        batched = jobtable.BatchKind(f"batch-{case}", Ping, type(None), batch=every, queue=queue)

        @runner.handler(batched)
        async def many(jobs: Sequence[jobtable.BatchJob[Ping, None]]) -> list[None]:
            await call()
            return [None] * len(jobs)

        def enqueue(payloads: list[Ping]) -> object:
            return batched.enqueue_many(db.store, payloads)
    else:
        single = jobtable.Kind(f"batch-{case}", Ping, type(None), queue=queue)

        @runner.handler(single)
        async def one(ctx: jobtable.JobContext[None], payload: Ping) -> None:
            await call()

        def enqueue(payloads: list[Ping]) -> object:
            return single.enqueue_many(db.store, payloads)

    payloads = [Ping(t=i) for i in range(COUNT)]
    for at in range(0, COUNT, _db.BATCH):
        enqueue(payloads[at : at + _db.BATCH])
    return runner


async def _drain(db: _db.Database, case: str, round_: int) -> tuple[float, int]:
    """Enqueues COUNT jobs of case, then times the runner from start until all finished.

    Returns the jobs a second and the handler's calls.
    """
    calls: list[int] = []
    runner = _runner(db, case, f"batch-{case}-{round_}", calls)
    return COUNT / await drain_seconds(runner, db), len(calls)


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: every case once per round, plan.repeat rounds."""
    for round_ in range(plan.repeat):
        for case in CASES:
            log(f"batch: {LABELS[case]}, {WORKERS} workers, {COUNT} jobs (round {round_ + 1})")
            try:
                rate, calls = asyncio.run(_drain(db, case, round_))
                if db.failed():
                    raise RuntimeError("jobs failed: see the log")
            finally:
                db.reset()
            results.add(f"batch.{case}", rate, "jobs/s")
            results.add(f"batch.{case}.calls", calls, "")


def add_rows(table: Table, get: Callable[[str], Figure | None]) -> None:
    """The section's rows: each batch case against one call per job, in the same rounds."""
    for case in CASES:
        ours = get(f"batch.{case}")
        base = get(f"batch.{case.replace('batch', 'single')}")
        table.add(
            f"{COUNT:,} jobs, {LABELS[case]}, {WORKERS} workers",
            cell(ours),
            "-" if case.startswith("single") else cell(base),
            "-" if case.startswith("single") else ratio(ours, base),
            f"handler calls: {cell(get(f'batch.{case}.calls'))}"
            + ("" if case.startswith("single") else "; raw column: one call per job, same rounds"),
        )
