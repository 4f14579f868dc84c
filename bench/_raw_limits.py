"""The raw limits: the store's own SQL in a tight loop, without the runner.

The "raw limits" section of ``make bench``: job lives (insert, claim,
succeed) a transaction per statement, per job and per 100 jobs; the
claim-and-finish cycle of 1, 4 and 16 jobs a commit, the most a runner of
that many workers can batch; and one event loop -> thread -> event loop
round trip (``bench._hop``). The loops themselves are each engine's
(``bench._sqlite_db``, ``bench._postgres_db``).
"""

from collections.abc import Callable

from bench import _db, _hop
from bench._plan import Plan, Results, calibrate, log


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: job lives (PostgreSQL: also over 4 connections), the hop, then the cycles."""
    log("raw limit: job lives per transaction, per step and batched")
    high = 200_000

    def lives(mode: str) -> Callable[[int], float]:
        return lambda count: db.raw_life(count, mode)

    counts = {
        mode: calibrate(lives(mode), 200, plan.seconds / 2, high)
        for mode in ("step", "life", "batch")
    }
    db.reset()
    results.counts.update({f"raw.{m}": c for m, c in counts.items()})
    for _ in range(plan.repeat):
        for mode, count in counts.items():
            results.add(f"raw.{mode}", count / db.raw_life(count, mode), "jobs/s")
            db.reset()
        if db.engine == "postgres":  # its writers overlap: raw_life_threads
            count = counts["batch"] * 2
            results.add("raw.batch4", count / db.raw_life_threads(count, 4), "jobs/s")
            db.reset()

    def cycles(workers: int) -> Callable[[int], float]:
        return lambda count: db.raw_cycle(count, workers)

    for _ in range(plan.repeat):
        results.add("hop.thread", _hop.round_trip(), "µs")
    for workers in (1, 4, 16):
        # What a runner of this many workers can put in one commit.
        key = f"raw.cycle{workers}"
        count = calibrate(cycles(workers), 200, plan.seconds / 2, high)
        db.reset()
        results.counts[key] = count
        for _ in range(plan.repeat):
            results.add(key, count / db.raw_cycle(count, workers), "jobs/s")
            db.reset()
