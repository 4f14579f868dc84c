"""Enqueue-to-start latency, in this process and from another, and scheduled jobs' lateness.

The "latency" section of ``make bench``: jobs enqueued a few ms apart, each
timed from before its enqueue to its handler's start, with the runner in
this process, in a worker process woken by the engine's signal and (SQLite)
in one that only polls; beside them the raw insert commit plus claim
commit, how late scheduled jobs start after their run_at, and the idle
worker process's CPU.
"""

import asyncio
import dataclasses
import datetime
import random
import time

import jobtable
from bench import _db
from bench._jobs import Ping, make_runner
from bench._plan import DEADLINE, Plan, Results, log
from bench._processes import spawn_workers, wait_pending
from bench._stats import percentile


async def _latency_inproc(store: jobtable.Store, count: int) -> list[float]:
    kinds = make_runner(store, workers=4, name="bench-latency")
    await kinds.runner.start()
    started = kinds.expect(count)
    rng = random.Random(5)
    for _ in range(count):
        await kinds.inproc.aenqueue(Ping(t=time.perf_counter()))
        await asyncio.sleep(rng.uniform(0.001, 0.005))
    await asyncio.wait_for(started.wait(), DEADLINE)
    kinds.runner.stop()
    await kinds.runner.wait()
    return [s * 1000 for s in kinds.latencies]


async def _lateness(store: jobtable.Store, count: int) -> list[float]:
    kinds = make_runner(store, workers=4, name="bench-schedule")
    await kinds.runner.start()
    started = kinds.expect(count)
    rng = random.Random(9)
    for _ in range(count):
        delay = rng.uniform(0.05, 0.3)
        at = time.time() + delay
        run_at = datetime.datetime.fromtimestamp(at, datetime.UTC)
        await kinds.scheduled.aenqueue(Ping(t=at), run_at=run_at)
        await asyncio.sleep(rng.uniform(0.001, 0.02))
    await asyncio.wait_for(started.wait(), DEADLINE)
    kinds.runner.stop()
    await kinds.runner.wait()
    return [s * 1000 for s in kinds.lateness]


def schedule_lateness(db: _db.Database, store: jobtable.Store, count: int) -> list[float]:
    """Milliseconds from each scheduled job's run_at to its handler's start (1 s poll)."""
    try:
        return asyncio.run(_lateness(store, count))
    finally:
        db.reset()


def latency_inproc(db: _db.Database, store: jobtable.Store, count: int) -> list[float]:
    """Milliseconds from before aenqueue to the handler's start, same process, one per job."""
    try:
        return asyncio.run(_latency_inproc(store, count))
    finally:
        db.reset()


@dataclasses.dataclass
class Cross:
    """What latency_cross measured: the latencies, and the worker's idle CPU."""

    samples: list[float]
    """Milliseconds from before enqueue in this process to the start in the worker."""
    idle_cpu: float
    """The idle worker process's CPU time, before any job, in percent of its wall time."""


def latency_cross(
    db: _db.Database, store: jobtable.Store, count: int, *, watch: bool, idle: float
) -> Cross:
    """Enqueues count jobs here for a worker process, after idle seconds of nothing.

    Without watch, a SQLite worker finds the jobs by polling every second.
    """
    (child,) = spawn_workers(db, 1, watch=watch)
    try:
        child.expect("ready")
        child.send("go")
        child.expect("started")
        child.send("cpu")
        used = float(child.expect(""))
        begin = time.perf_counter()
        time.sleep(idle)
        child.send("cpu")
        idle_cpu = (float(child.expect("")) - used) * 100 / (time.perf_counter() - begin)
        kinds = make_runner(store, workers=1, name="bench-enqueuer")
        rng = random.Random(7)
        for _ in range(count):
            kinds.latency.enqueue(Ping(t=time.time()))
            time.sleep(rng.uniform(0.002, 0.02))
        wait_pending(db, 0.01)
    finally:
        child.finish()
    samples = [float(r) * 1000 for r in db.results("latency")]
    db.reset()
    return Cross(samples, idle_cpu)


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: in-process, scheduled, raw, then another process (SQLite: also polling)."""
    store = db.store
    count = plan.latency_jobs
    log(f"enqueue-to-start latency, {count} jobs x {plan.repeat}")
    for _ in range(plan.repeat):
        samples = latency_inproc(db, store, count)
        results.add("lat.in.p50", percentile(samples, 50), "ms")
        results.add("lat.in.p99", percentile(samples, 99), "ms")
        late = schedule_lateness(db, store, count)
        results.add("lat.sched.p50", percentile(late, 50), "ms")
        results.add("lat.sched.p99", percentile(late, 99), "ms")
        raw = [s * 1000 for s in db.raw_start_latency(count)]
        db.reset()
        results.add("lat.raw.p50", percentile(raw, 50), "ms")
        results.add("lat.raw.p99", percentile(raw, 99), "ms")
        ways = [("cross", True)] + ([("poll", False)] if db.engine == "sqlite" else [])
        for key, watch in ways:
            cross = latency_cross(db, store, count, watch=watch, idle=plan.idle_seconds)
            results.add(f"lat.{key}.p50", percentile(cross.samples, 50), "ms")
            results.add(f"lat.{key}.p99", percentile(cross.samples, 99), "ms")
            results.add(f"idle.{key}", cross.idle_cpu, "% CPU")
