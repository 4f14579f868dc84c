"""The measurements of one engine: each runs the runner and, beside it, the raw limit."""

import asyncio
import contextlib
import dataclasses
import datetime
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jobtable
from bench import _db, _hop
from bench import _uniqueness as _uniqueness_section
from bench._jobs import Ping, make_runner
from bench._stats import Figure, percentile

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 600.0
"""Seconds any one wait for jobs to finish may take before the benchmark gives up."""

PAYLOADS = [Ping() for _ in range(_db.BATCH)]

CONCURRENT_THREADS = (8, 32)
"""Thread counts of the concurrent-enqueuer figures."""
CONCURRENT_TASKS = 32
"""Asyncio tasks of the concurrent-enqueuer figure."""


@dataclasses.dataclass
class Plan:
    """How much work each measurement does."""

    quick: bool
    repeat: int
    seconds: float
    """Target duration of one throughput run."""
    latency_jobs: int
    single_calls: int
    concurrent_calls: int
    """Enqueue calls of a concurrent-enqueuer figure, shared by its threads or tasks."""
    batched_jobs: int
    finished_sizes: list[int]
    memory_jobs: int
    memory_seconds: float
    idle_seconds: float
    """How long a worker process sits idle while its CPU time is measured."""
    only: tuple[str, ...] = ()
    """The SECTIONS to run; empty for all."""

    @classmethod
    def make(cls, *, quick: bool, repeat: int | None) -> "Plan":
        if quick:
            return cls(
                True, repeat or 1, 0.5, 100, 200, 640, 2_000, [0, 10_000, 100_000], 10_000, 2.0, 3.0
            )
        return cls(
            False,
            repeat or 3,
            2.0,
            300,
            1_000,
            3_200,
            10_000,
            [0, 100_000, 1_000_000],
            100_000,
            8.0,
            10.0,
        )


class Results:
    """The figures of one engine, by key."""

    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}
        self.counts: dict[str, int] = {}
        self.notes: list[str] = []
        """What went wrong in a run, printed under the table."""

    def add(self, key: str, value: float, unit: str) -> None:
        self.figures.setdefault(key, Figure([], unit)).values.append(value)

    def get(self, key: str) -> Figure | None:
        return self.figures.get(key)


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _rounded(count: float, low: int, high: int) -> int:
    return max(low, min(high, int(count) // _db.BATCH * _db.BATCH))


# The event loop's lag: how late a 1 ms sleep wakes.


async def lag_probe(stop: asyncio.Event, samples: list[float]) -> None:
    """Sleeps 1 ms over and over until stop, recording how late each wake-up was, in ms."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(0.001)
        samples.append((loop.time() - before - 0.001) * 1000)


def add_lag(results: Results, key: str, samples: list[float]) -> None:
    results.add(f"{key}.p50", percentile(samples, 50), "ms")
    results.add(f"{key}.p99", percentile(samples, 99), "ms")
    results.add(f"{key}.max", max(samples, default=float("nan")), "ms")


async def _idle_lag(seconds: float) -> list[float]:
    samples: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(lag_probe(stop, samples))
    await asyncio.sleep(seconds)
    stop.set()
    await task
    return samples


# End to end, in this process.


async def _wait_done(db: _db.Database, started: asyncio.Event | None) -> None:
    """Waits until no job is queued or running, by reading the table."""
    deadline = time.perf_counter() + DEADLINE
    if started is not None:
        await asyncio.wait_for(started.wait(), DEADLINE)
    while await asyncio.to_thread(db.pending):
        if time.perf_counter() > deadline:
            raise TimeoutError("jobs still pending")
        await asyncio.sleep(0.001)


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
    await _wait_done(db, started)
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
        failed = db.failed()
        if failed:
            raise RuntimeError(f"{failed} jobs failed: see the log")
    finally:
        db.reset(keep)
    return rate, lag


# End to end, in other processes.


class Child:
    """A process of bench._child, spoken to line by line."""

    def __init__(self, args: dict[str, Any]) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench._child", json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )

    def expect(self, word: str) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if word and line != word:
            self.proc.kill()
            raise RuntimeError(f"bench child said {line!r}, want {word!r}")
        return line

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self.send("stop")
        self.proc.wait(timeout=60)


def _workers(db: _db.Database, count: int, **args: Any) -> Iterator[Child]:
    for i in range(count):
        yield Child(
            {
                "mode": "worker",
                "target": db.target,
                "name": f"bench-process-{i}",
                "workers": 4,
                "poll_interval": 1.0,
                **args,
            }
        )


def _wait_pending(db: _db.Database, interval: float) -> None:
    deadline = time.perf_counter() + DEADLINE
    while db.pending():
        if time.perf_counter() > deadline:
            raise TimeoutError("jobs still pending")
        time.sleep(interval)


def processes(db: _db.Database, store: jobtable.Store, procs: int, count: int) -> float:
    """Jobs per second of procs worker processes (4 workers each) on count queued no-op jobs."""
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    for _ in range(count // _db.BATCH):
        kinds.noop.enqueue_many(PAYLOADS)
    children = list(_workers(db, procs))
    try:
        for child in children:
            child.expect("ready")
        begin = time.perf_counter()
        for child in children:
            child.send("go")
        _wait_pending(db, 0.002)
        elapsed = time.perf_counter() - begin
        for child in children:
            child.expect("started")
    finally:
        for child in children:
            child.finish()
    failed = db.failed()
    db.reset()
    if failed:
        raise RuntimeError(f"{failed} jobs failed: see the log")
    return count / elapsed


# Enqueue-to-start latency.


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
    (child,) = _workers(db, 1, watch=watch)
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
        _wait_pending(db, 0.01)
    finally:
        child.finish()
    samples = [float(r) * 1000 for r in db.results("latency")]
    db.reset()
    return Cross(samples, idle_cpu)


# Enqueue and claim through the library, one call at a time.


def enqueue_single(store: jobtable.Store, count: int) -> float:
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    enqueue = kinds.noop.enqueue
    payload = Ping()
    begin = time.perf_counter()
    for _ in range(count):
        enqueue(payload)
    return time.perf_counter() - begin


def enqueue_batched(store: jobtable.Store, count: int) -> float:
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


# Peak memory.


def memory(db: _db.Database, plan: Plan, raw: bool) -> dict[str, float]:
    child = Child(
        {
            "mode": "memory-raw" if raw else "memory",
            "engine": db.engine,
            "target": db.target,
            "jobs": plan.memory_jobs,
            "workers": 4,
            "seconds": plan.memory_seconds,
        }
    )
    try:
        line = child.expect("")
        child.proc.wait(timeout=DEADLINE)
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
    db.reset()
    result: dict[str, float] = json.loads(line)
    return result


# The whole engine.


def calibrate(measure: Callable[[int], float], probe: int, seconds: float, high: int) -> int:
    """The count of jobs that measure (count -> seconds) handles in about seconds."""
    elapsed = measure(probe)
    return _rounded(probe / max(elapsed, 1e-6) * seconds, _db.BATCH, high)


SECTIONS = (
    "raw limits",
    "end to end",
    "worker processes",
    "enqueue",
    "uniqueness",
    "latency",
    "memory",
    "finished rows",
)
"""The measurements run_engine makes, in order."""


def run_engine(db: _db.Database, plan: Plan) -> Results:
    """Every measurement of one engine, repeated as plan says."""
    results = Results()
    store = db.store
    sections: list[tuple[str, Callable[[], None]]] = [
        ("raw limits", lambda: _raw_lives(db, plan, results)),
        ("end to end", lambda: _throughput(db, store, plan, results)),
        ("worker processes", lambda: _process_throughput(db, store, plan, results)),
        ("enqueue", lambda: _enqueue(db, store, plan, results)),
        ("uniqueness", lambda: _uniqueness(db, store, plan, results)),
        ("latency", lambda: _latency(db, store, plan, results)),
        ("memory", lambda: _memory(db, plan, results)),
        ("finished rows", lambda: _finished_rows(db, store, plan, results)),
    ]
    for name, section in sections:
        if plan.only and name not in plan.only:
            continue
        try:
            section()
        except Exception as err:  # e.g. the server restarted: keep the other figures
            results.notes.append(
                f"The {name} measurements stopped early: {type(err).__name__}: {err}"
            )
            log(results.notes[-1])
            try:
                db.reconnect()
                db.reset()
            except Exception as again:
                log(f"cannot go on with this engine: {again}")
                break
    return results


def _failed(results: Results, what: str, err: Exception) -> None:
    """Records a run whose jobs failed: it gives no figure, and the table says so."""
    results.notes.append(f"A run of {what} was left out: {err}.")
    log(results.notes[-1])


def _raw_lives(db: _db.Database, plan: Plan, results: Results) -> None:
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
        if isinstance(db, _db.PostgresDatabase):
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


def _throughput(db: _db.Database, store: jobtable.Store, plan: Plan, results: Results) -> None:
    log("idle event loop lag")
    for _ in range(plan.repeat):
        add_lag(results, "lag.idle", asyncio.run(_idle_lag(plan.seconds / 2)))
    for workers in (1, 4, 16):
        rate, _ = end_to_end(db, store, workers, 5 * _db.BATCH if plan.quick else 10 * _db.BATCH)
        count = _rounded(rate * plan.seconds, _db.BATCH, 200_000)
        results.counts[f"e2e.{workers}"] = count
        log(f"end to end, {workers} workers, {count} jobs x {plan.repeat}")
        for _ in range(plan.repeat):
            try:
                rate, lag = end_to_end(db, store, workers, count)
            except RuntimeError as err:
                _failed(results, f"end to end, {workers} workers", err)
                continue
            results.add(f"e2e.{workers}", rate, "jobs/s")
            add_lag(results, f"lag.w{workers}", lag)


def _process_throughput(
    db: _db.Database, store: jobtable.Store, plan: Plan, results: Results
) -> None:
    for procs in (1, 3):
        count = results.counts.get("e2e.4", 2000) * (2 if procs == 3 else 1)
        results.counts[f"proc.{procs}"] = count
        log(f"end to end, {procs} worker processes x 4 workers, {count} jobs x {plan.repeat}")
        for _ in range(plan.repeat):
            try:
                results.add(f"proc.{procs}", processes(db, store, procs, count), "jobs/s")
            except RuntimeError as err:
                _failed(results, f"end to end, {procs} processes", err)


def _enqueue(db: _db.Database, store: jobtable.Store, plan: Plan, results: Results) -> None:
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


def _uniqueness(db: _db.Database, store: jobtable.Store, plan: Plan, results: Results) -> None:
    log("enqueue with a unique key against without")
    _uniqueness_section.measure(
        db, store, plan.repeat, plan.single_calls, plan.batched_jobs, results.add
    )


def _latency(db: _db.Database, store: jobtable.Store, plan: Plan, results: Results) -> None:
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


def _memory(db: _db.Database, plan: Plan, results: Results) -> None:
    log(f"peak memory with {plan.memory_jobs} queued jobs")
    for raw in (False, True):
        prefix = "mem.raw" if raw else "mem"
        found = memory(db, plan, raw)
        for stage in ("baseline", "opened", "enqueued", "running"):
            results.add(f"{prefix}.{stage}", found[stage], "MiB")
        results.add(f"{prefix}.ran", found["ran"], "jobs")


def _finished_rows(db: _db.Database, store: jobtable.Store, plan: Plan, results: Results) -> None:
    single = plan.single_calls
    batched = plan.batched_jobs
    e2e_count = results.counts.get("e2e.4", 2000)
    for size in plan.finished_sizes:
        have = db.count("succeeded")  # the loaded rows: every run's own are deleted after it
        if size > have:
            log(f"bulk-loading {size - have} finished rows")
            begin = time.perf_counter()
            db.fill_finished(size - have)
            log(f"  loaded in {time.perf_counter() - begin:.1f} s")
        keep = db.max_seq()
        log(f"costs with {size} finished rows x {plan.repeat}")
        for _ in range(plan.repeat):
            at = f"rows{size}"
            results.add(f"{at}.enq.single", single / enqueue_single(store, single), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.raw.insert1", single / db.raw_insert(single, 1), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.enq.many", batched / enqueue_batched(store, batched), "jobs/s")
            db.reset(keep)
            results.add(
                f"{at}.raw.insert100", batched / db.raw_insert(batched, _db.BATCH), "jobs/s"
            )
            db.reset(keep)
            results.add(f"{at}.claim.single", single / claim_single(store, single), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.raw.claim1", single / db.raw_claim(single, 1), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.raw.claim100", batched / db.raw_claim(batched, _db.BATCH), "jobs/s")
            db.reset(keep)
            try:
                rate, _ = end_to_end(db, store, 4, e2e_count, keep)
                results.add(f"{at}.e2e.4", rate, "jobs/s")
            except RuntimeError as err:
                _failed(results, f"end to end, 4 workers, {size} finished rows", err)
            results.add(f"{at}.raw.batch", batched / db.raw_life(batched, "batch"), "jobs/s")
            db.reset(keep)
