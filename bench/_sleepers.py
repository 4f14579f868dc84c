"""What sleeping jobs cost the claim: ``make bench``'s "sleepers" section.

A job that sleeps (``JobContext.sleep_for``) or waits for a signal is back
in the table, scheduled: it holds no worker, no connection and no process.
This section puts SLEEPERS jobs to sleep through a real runner (each takes
its claim, records its sleep and goes back), stops the runner, and then
times single-job claims of other jobs of the same queue beside the same
claims with no sleeper, in one run: the ratio is what the sleepers add to a
claim (1.00x: nothing).
"""

import asyncio
import datetime
from collections.abc import Callable

import jobtable
from bench import _db
from bench._enqueue import claim_single
from bench._plan import Plan, Results, log
from bench._stats import Figure, Table, cell, ratio

SLEEPERS = 10_000
"""How many jobs sleep while the claims are timed."""

NAPPER = jobtable.Kind("bench-napper", int, int)


async def _put_to_sleep(store: jobtable.Store, count: int) -> None:
    """Runs count jobs that each sleep a day; returns once every one went back to the table."""
    runner = jobtable.Runner(store, workers=8, poll_interval=0.05, name="bench-sleepers")

    @runner.handler(NAPPER)
    async def nap(ctx: jobtable.JobContext[int], payload: int) -> int:
        await ctx.sleep_for(datetime.timedelta(days=1))
        return payload

    ids = NAPPER.enqueue_many(store, list(range(count)))
    await runner.start()
    try:
        while not _asleep(store, ids[-1]):  # noqa: ASYNC110 (the store is polled: no event)
            await asyncio.sleep(0.2)
    finally:
        runner.stop()
        await runner.wait()


def _asleep(store: jobtable.Store, last: str) -> bool:
    """Whether the last job was claimed and no job of the kind runs any more."""
    running = store.counts().get(NAPPER.name, {}).get(jobtable.Status.RUNNING, 0)
    return store.inspect(last).attempt > 0 and not running


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: claims with no sleeper, then with SLEEPERS, plan.repeat times each."""
    store = db.store
    count = plan.single_calls
    sleepers = 1000 if plan.quick else SLEEPERS
    for _ in range(plan.repeat):
        log(f"sleepers: {count} claims with none asleep")
        db.reset()
        results.add("sleepers.none", count / claim_single(store, count), "claims/s")
        db.reset()
        log(f"sleepers: putting {sleepers} jobs to sleep")
        asyncio.run(_put_to_sleep(store, sleepers))
        keep = db.max_seq()
        log(f"sleepers: {count} claims with {sleepers} asleep")
        results.add("sleepers.many", count / claim_single(store, count), "claims/s")
        db.reset(keep)
        db.reset()
    results.counts["sleepers"] = sleepers


def add_rows(table: Table, g: Callable[[str], Figure | None]) -> None:
    """The section's row: a claim's rate with the sleepers, against none (the raw column)."""
    table.add(
        "claim, 1 job a claim, beside sleeping jobs",
        cell(g("sleepers.many")),
        cell(g("sleepers.none")),
        ratio(g("sleepers.many"), g("sleepers.none")),
        f"'raw limit' here: the same claims with no sleeper; {SLEEPERS} asleep",
    )
