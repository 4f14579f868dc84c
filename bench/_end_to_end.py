"""End to end in this process: a runner drains queued no-op jobs, and its event loop's lag.

The "end to end" section of ``make bench``: for 1, 4 and 16 workers, the
rate at which a runner started on a full queue runs every job, timed until
the table holds no queued or running job, and how late a 1 ms sleep wakes
on its event loop meanwhile (beside the same probe on an idle loop).
"""

import asyncio
import time

import jobtable
from bench import _db
from bench._jobs import make_runner
from bench._plan import DEADLINE, PAYLOADS, Plan, Results, failed, log, rounded
from bench._stats import percentile

# The event loop's lag: how late a 1 ms sleep wakes.


async def lag_probe(stop: asyncio.Event, samples: list[float]) -> None:
    """Sleeps 1 ms over and over until stop, recording how late each wake-up was, in ms."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(0.001)
        samples.append((loop.time() - before - 0.001) * 1000)


def add_lag(results: Results, key: str, samples: list[float]) -> None:
    """Adds the p50, p99 and max of samples (ms) to results under key."""
    results.add(f"{key}.p50", percentile(samples, 50), "ms")
    results.add(f"{key}.p99", percentile(samples, 99), "ms")
    results.add(f"{key}.max", max(samples, default=float("nan")), "ms")


async def _idle_lag(seconds: float) -> list[float]:
    """The lag probe's samples over seconds on a loop with nothing else to do."""
    samples: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(lag_probe(stop, samples))
    await asyncio.sleep(seconds)
    stop.set()
    await task
    return samples


# End to end, in this process.


async def wait_done(db: _db.Database, started: asyncio.Event | None) -> None:
    """Waits until no job is queued or running, by reading the table."""
    deadline = time.perf_counter() + DEADLINE
    if started is not None:
        await asyncio.wait_for(started.wait(), DEADLINE)
    while await asyncio.to_thread(db.pending):
        if time.perf_counter() > deadline:
            raise TimeoutError("jobs still pending")
        await asyncio.sleep(0.001)


async def drain_seconds(
    runner: jobtable.Runner, db: _db.Database, started: asyncio.Event | None = None
) -> float:
    """Starts runner, waits until no job is queued or running, stops it: the seconds to done."""
    begin = time.perf_counter()
    await runner.start()
    await wait_done(db, started)
    elapsed = time.perf_counter() - begin
    runner.stop()
    await runner.wait()
    return elapsed


async def _end_to_end(
    db: _db.Database, store: jobtable.Store, workers: int, count: int, lag: list[float]
) -> float:
    """Enqueues count no-op jobs, then times a runner of workers from start until all finished."""
    kinds = make_runner(store, workers=workers, name=f"bench-w{workers}")
    for _ in range(count // _db.BATCH):
        kinds.noop.enqueue_many(PAYLOADS)
    started = kinds.expect(count)
    stop = asyncio.Event()
    probe = asyncio.create_task(lag_probe(stop, lag))
    begin = time.perf_counter()
    await kinds.runner.start()
    await wait_done(db, started)
    elapsed = time.perf_counter() - begin
    stop.set()
    await probe
    kinds.runner.stop()
    await kinds.runner.wait()
    return count / elapsed


def end_to_end(
    db: _db.Database, store: jobtable.Store, workers: int, count: int, keep: int = 0
) -> tuple[float, list[float]]:
    """Jobs per second and the loop lag samples of one run; resets the table after."""
    lag: list[float] = []
    try:
        rate = asyncio.run(_end_to_end(db, store, workers, count, lag))
        failures = db.failed()
        if failures:
            raise RuntimeError(f"{failures} jobs failed: see the log")
    finally:
        db.reset(keep)
    return rate, lag


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: the idle loop's lag, then 1, 4 and 16 workers, each sized to plan.seconds."""
    store = db.store
    log("idle event loop lag")
    for _ in range(plan.repeat):
        add_lag(results, "lag.idle", asyncio.run(_idle_lag(plan.seconds / 2)))
    for workers in (1, 4, 16):
        rate, _ = end_to_end(db, store, workers, 5 * _db.BATCH if plan.quick else 10 * _db.BATCH)
        count = rounded(rate * plan.seconds, _db.BATCH, 200_000)
        results.counts[f"e2e.{workers}"] = count
        log(f"end to end, {workers} workers, {count} jobs x {plan.repeat}")
        for _ in range(plan.repeat):
            try:
                rate, lag = end_to_end(db, store, workers, count)
            except RuntimeError as err:
                failed(results, f"end to end, {workers} workers", err)
                continue
            results.add(f"e2e.{workers}", rate, "jobs/s")
            add_lag(results, f"lag.w{workers}", lag)
