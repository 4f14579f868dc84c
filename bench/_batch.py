"""Batch kinds against one handler call per job: ``make bench``'s "batch" section.

A runner of 100 workers drains 10,000 queued jobs of one queue, timed from
its start until no job is queued or running, once per case, the cases
interleaved in each round so that the ratios compare runs made moments
apart:

- single, no-op: a ``Kind`` whose handler returns at once (the baseline);
- batch, no-op: a ``BatchKind`` of size 100, its handler returning at once:
  what gathering jobs into calls costs or saves the runner itself;
- single, 5 ms a call: each call awaits 5 ms, as a round trip to a service
  would (the mail API, the embedding model);
- batch, 5 ms a call: the same 5 ms a call, 100 jobs a call.

Each job still has its own claim and outcome, so the table's commit rate
bounds both; what batching saves is the handler's calls.
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

WORKERS = 100
SIZE = 100
COUNT = 10_000
CALL = 0.005
"""Seconds a call of the "5 ms a call" cases awaits."""
CASES = ("single", "batch", "single-io", "batch-io")
LABELS = {
    "single": "one call per job, no-op",
    "batch": f"batches of {SIZE}, no-op",
    "single-io": f"one call per job, {CALL * 1000:g} ms a call",
    "batch-io": f"batches of {SIZE}, {CALL * 1000:g} ms a call",
}


def _runner(db: _db.Database, case: str, queue: str) -> jobtable.Runner:
    """A runner of WORKERS workers over queue with the case's handler attached."""
    runner = jobtable.Runner(db.store, queues={queue: WORKERS}, name=f"bench-batch-{case}")
    wait = CALL if case.endswith("-io") else 0.0
    if case.startswith("batch"):
        every = jobtable.Batch(size=SIZE, max_wait=datetime.timedelta(milliseconds=50))
        batched = jobtable.BatchKind(f"batch-{case}", Ping, type(None), batch=every, queue=queue)

        @runner.handler(batched)
        async def many(jobs: Sequence[jobtable.BatchJob[Ping, None]]) -> list[None]:
            if wait:
                await asyncio.sleep(wait)
            return [None] * len(jobs)

        def enqueue(payloads: list[Ping]) -> object:
            return batched.enqueue_many(db.store, payloads)
    else:
        single = jobtable.Kind(f"batch-{case}", Ping, type(None), queue=queue)

        @runner.handler(single)
        async def one(ctx: jobtable.JobContext[None], payload: Ping) -> None:
            if wait:
                await asyncio.sleep(wait)

        def enqueue(payloads: list[Ping]) -> object:
            return single.enqueue_many(db.store, payloads)

    payloads = [Ping(t=i) for i in range(COUNT)]
    for at in range(0, COUNT, _db.BATCH):
        enqueue(payloads[at : at + _db.BATCH])
    return runner


async def _drain(db: _db.Database, case: str, round_: int) -> float:
    """Enqueues COUNT jobs of case, then times the runner from start until all finished."""
    runner = _runner(db, case, f"batch-{case}-{round_}")
    return COUNT / await drain_seconds(runner, db)


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: every case once per round, plan.repeat rounds."""
    for round_ in range(plan.repeat):
        for case in CASES:
            log(f"batch: {LABELS[case]}, {WORKERS} workers, {COUNT} jobs (round {round_ + 1})")
            try:
                rate = asyncio.run(_drain(db, case, round_))
                if db.failed():
                    raise RuntimeError("jobs failed: see the log")
            finally:
                db.reset()
            results.add(f"batch.{case}", rate, "jobs/s")


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
            "" if case.startswith("single") else "raw column: one call per job, same rounds",
        )
