"""The cost of flow control on the claim: ``make bench``'s "flow" section.

A runner of 16 workers drains queued no-op jobs of one queue, timed from its
start until no job is queued or running, once per case, the cases
interleaved in each round so that the ratios compare runs made moments
apart. Each case has a queue of its own, so a limit never outlives its case:

- unlimited: no flow control, the plain claim (the baseline of the others);
- global: concurrency 8 of the 16 workers;
- partitions: 100 partition keys, partition_limit 1;
- rate: a rate limit far above the drain rate (1,000,000 a second), so the
  claim counts starts and records them but never waits for the window;
- sequences: 1,000 sequence keys, no limit (the plain claim with its
  sequence check; each sequence runs one job at a time).

Each case is a ratio to the unlimited run of the same round. The unlimited
case is also set beside the end-to-end section's 16 workers (the same
drain, measured earlier in the run when that section ran): flow control
must leave the plain path as it was.
"""

import asyncio
import datetime
from collections.abc import Callable

import jobtable
from bench import _db
from bench._end_to_end import drain_seconds
from bench._jobs import Ping
from bench._plan import Plan, Results, log
from bench._stats import Figure, Table, cell, ratio

WORKERS = 16
PARTITIONS = 100
SEQUENCES = 1000
CASES = ("unlimited", "global", "partitions", "rate", "sequences")
LABELS = {
    "unlimited": "no limit",
    "global": "global concurrency 8",
    "partitions": f"{PARTITIONS} partitions, limit 1",
    "rate": "rate 1,000,000/s, far above the drain",
    "sequences": f"{SEQUENCES:,} sequences",
}
TARGET = 0.7
"""A limited claim's throughput as a share of the unlimited claim's, at 16 workers."""


def _declared(case: str, queue: str) -> list[jobtable.Queue]:
    if case == "global":
        return [jobtable.Queue(queue, concurrency=8)]
    if case == "partitions":
        return [jobtable.Queue(queue, partition_limit=1)]
    if case == "rate":
        per = datetime.timedelta(seconds=1)
        return [jobtable.Queue(queue, rate=jobtable.Rate(1_000_000, per=per))]
    return []


def _kind(case: str, queue: str) -> jobtable.Kind[Ping, None]:
    """The case's no-op kind; a job's key is its payload's t, a number its enqueue gives."""
    partition = sequence = None
    if case == "partitions":
        partition = jobtable.Partition(lambda p: str(int(p.t) % PARTITIONS))
    if case == "sequences":
        sequence = jobtable.Sequence(lambda p: str(int(p.t) % SEQUENCES))
    return jobtable.Kind(
        f"flow-{case}", Ping, type(None), queue=queue, partition=partition, sequence=sequence
    )


async def _drain(db: _db.Database, case: str, count: int, round_: int) -> float:
    """Enqueues count jobs of case, then times a 16-worker runner from start until all finished."""
    store = db.store
    queue = f"flow-{case}-{round_}"
    kind = _kind(case, queue)
    payloads = [Ping(t=i) for i in range(count)]
    for at in range(0, count, _db.BATCH):
        kind.enqueue_many(store, payloads[at : at + _db.BATCH])
    runner = jobtable.Runner(
        store,
        queues={queue: WORKERS},
        name=f"bench-flow-{case}",
        flow=_declared(case, queue),
    )

    @runner.handler(kind)
    async def noop(ctx: jobtable.JobContext[None], payload: Ping) -> None:
        return None

    return count / await drain_seconds(runner, db)


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: every case once per round, plan.repeat rounds."""
    count = 4_000 if plan.quick else 20_000
    for round_ in range(plan.repeat):
        for case in CASES:
            log(f"flow: {case}, {WORKERS} workers, {count} jobs (round {round_ + 1})")
            try:
                rate = asyncio.run(_drain(db, case, count, round_))
                if db.failed():
                    raise RuntimeError("jobs failed: see the log")
            finally:
                db.reset()
            results.add(f"flow.{case}", rate, "jobs/s")
    results.counts["flow"] = count


def add_rows(table: Table, get: Callable[[str], Figure | None]) -> None:
    """The section's rows: each case against the unlimited run of the same section."""
    base = get("flow.unlimited")
    table.add(
        f"flow: {LABELS['unlimited']}, {WORKERS} workers",
        cell(base),
        cell(get("e2e.16")),
        ratio(base, get("e2e.16")),
        "raw column: end to end, 16 workers (the plain claim before flow control's section)",
    )
    for case in CASES[1:]:
        ours = get(f"flow.{case}")
        table.add(
            f"flow: {LABELS[case]}, {WORKERS} workers",
            cell(ours),
            cell(base),
            ratio(ours, base),
            "raw column: no limit, in the same rounds",
        )


def targets(get: Callable[[str], Figure | None]) -> list[tuple[str, Figure | None, Figure | None]]:
    """The flow targets: each limited case against the unlimited one, to reach TARGET."""
    return [
        (
            f"flow, {LABELS[case]}: >= {TARGET:.0%} of no limit at {WORKERS} workers",
            get(f"flow.{case}"),
            get("flow.unlimited"),
        )
        for case in CASES[1:]
    ]
