"""From a held job's release to its start: ``make bench``'s "wake-up" section.

A job held back (behind its sequence's predecessor, behind a limit another
runner's job fills, by a pause, by a limit, behind a dependency, by a rate
window) must start as soon as it is released, not at the runner's next
poll; so must one an operator's cancel of its sequence's predecessor
releases. Each case holds one job at a time, lets the runner settle into its
idle wait, releases the job and times the release to the job's start (its
handler's first line; for the rate window, the claim's start time against
the moment the window admits it). The runners poll every POLL seconds, so a
wake that relied on the poll would show as about half of it. Every runner
is in this process, on the engine's store; on PostgreSQL each listens on its
own connection as a runner in another process would.
"""

import asyncio
import contextlib
import datetime
import time
from collections.abc import AsyncIterator, Callable, Coroutine

import jobtable
from bench import _db
from bench._plan import Plan, Results, log
from bench._stats import Figure, Table, cell, percentile

POLL = 1.0
"""The runners' poll interval, in seconds."""
SETTLE = 0.1
"""Seconds a case waits, before it releases its job, for the runners to wait idle."""
PER = 0.2
"""The rate case's window: one start per PER seconds."""
CASES = ("sequence", "slot", "resume", "limit", "dependency", "rate", "cancel")
LABELS = {
    "sequence": "sequence: predecessor ended",
    "slot": "concurrency slot freed by another runner",
    "resume": "queue resumed",
    "limit": "limit raised (set_limits)",
    "dependency": "workflow dependency settled",
    "rate": f"rate window opened (1 per {PER} s)",
    "cancel": "sequence: queued predecessor cancelled",
}
TARGET_P50 = 20.0
TARGET_P99 = 100.0
"""Milliseconds from release to start that the wake-ups must meet."""


class _Jobs:
    """One case's kind and queue, and the handler's record: each job's start and end, and
    the gates the holding jobs wait on."""

    def __init__(self, case: str, round_: int) -> None:
        # A queue of its own for each case and round: declared limits outlive a case.
        self.queue = f"wake-{case}-{round_}"
        self.kind = jobtable.Kind(f"wake-{case}", int, int, queue=self.queue)
        self.started: dict[int, float] = {}
        self.ended: dict[int, float] = {}
        self.gates: dict[int, asyncio.Event] = {}

    def gate(self, n: int) -> asyncio.Event:
        return self.gates.setdefault(n, asyncio.Event())

    async def run(self, n: int) -> int:
        self.started[n] = time.time()
        if n % 2 == 0:  # even jobs hold; odd ones are the jobs they hold back
            await self.gate(n).wait()
        self.ended[n] = time.time()
        return n

    async def start_of(self, n: int) -> float:
        while n not in self.started:  # noqa: ASYNC110
            await asyncio.sleep(0.001)
        return self.started[n]


def _runner(
    store: jobtable.Store,
    jobs: _Jobs,
    name: str,
    *,
    workers: int = 1,
    flow: tuple[jobtable.Queue, ...] = (),
) -> jobtable.Runner:
    runner = jobtable.Runner(
        store, queues={jobs.queue: workers}, poll_interval=POLL, name=name, flow=flow
    )

    @runner.handler(jobs.kind)
    async def step(ctx: jobtable.JobContext[int], n: int) -> int:
        return await jobs.run(n)

    return runner


@contextlib.asynccontextmanager
async def _started(runner: jobtable.Runner) -> AsyncIterator[None]:
    """Runs runner for the block: started on entry, stopped and waited for on exit."""
    await runner.start()
    try:
        yield
    finally:
        runner.stop()
        await runner.wait()


Case = Callable[[jobtable.Store, _Jobs, int], Coroutine[object, object, list[float]]]


async def _sequence(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    runner = _runner(store, jobs, "bench-wake-seq")
    samples = []
    async with _started(runner):
        for i in range(count):
            jobs.kind.enqueue_many(store, [2 * i, 2 * i + 1], sequence_key=f"s{i}")
            await jobs.start_of(2 * i)
            await asyncio.sleep(SETTLE)
            jobs.gate(2 * i).set()
            samples.append(await jobs.start_of(2 * i + 1) - jobs.ended[2 * i])
    return samples


async def _slot(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    """The holder's runner stops as its job ends, so only the waiting runner can take the slot."""
    flow = (jobtable.Queue(jobs.queue, concurrency=1),)
    samples = []
    for i in range(count):
        holder = _runner(store, jobs, f"bench-wake-holder-{i}", flow=flow)
        await holder.start()
        jobs.kind.enqueue(store, 2 * i)
        await jobs.start_of(2 * i)
        waiter = _runner(store, jobs, f"bench-wake-waiter-{i}", flow=flow)
        await waiter.start()
        jobs.kind.enqueue(store, 2 * i + 1)
        await asyncio.sleep(SETTLE)
        holder.stop()
        jobs.gate(2 * i).set()
        samples.append(await jobs.start_of(2 * i + 1) - jobs.ended[2 * i])
        await holder.wait()
        waiter.stop()
        await waiter.wait()
    return samples


async def _resume(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    runner = _runner(store, jobs, "bench-wake-resume")
    samples = []
    async with _started(runner):
        for i in range(count):
            store.pause(jobs.queue)
            jobs.kind.enqueue(store, 2 * i + 1)
            await asyncio.sleep(SETTLE)
            released = time.time()
            store.resume(jobs.queue)
            samples.append(await jobs.start_of(2 * i + 1) - released)
    return samples


async def _limit(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    runner = _runner(store, jobs, "bench-wake-limit", workers=2)
    samples = []
    try:
        async with _started(runner):
            for i in range(count):
                store.set_limits(jobs.queue, concurrency=1)
                jobs.kind.enqueue_many(store, [2 * i, 2 * i + 1])
                await jobs.start_of(2 * i)
                await asyncio.sleep(SETTLE)
                released = time.time()
                store.set_limits(jobs.queue, concurrency=2)
                samples.append(await jobs.start_of(2 * i + 1) - released)
                jobs.gate(2 * i).set()
                while 2 * i not in jobs.ended:  # noqa: ASYNC110
                    await asyncio.sleep(0.001)
    finally:
        store.clear_limits(jobs.queue)
    return samples


async def _dependency(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    runner = _runner(store, jobs, "bench-wake-deps")
    samples = []
    async with _started(runner):
        for i in range(count):
            wf = jobtable.Workflow(f"wake-{i}")
            first = wf.add(jobs.kind, 2 * i)
            wf.add(jobs.kind, 2 * i + 1, after=[first])
            await wf.aenqueue(store)
            await jobs.start_of(2 * i)
            await asyncio.sleep(SETTLE)
            jobs.gate(2 * i).set()
            samples.append(await jobs.start_of(2 * i + 1) - jobs.ended[2 * i])
    return samples


async def _rate(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    """The second of two jobs starts when the window opens: its claim's time against that."""
    rate = jobtable.Rate(1, per=datetime.timedelta(seconds=PER))
    runner = _runner(store, jobs, "bench-wake-rate", flow=(jobtable.Queue(jobs.queue, rate=rate),))
    samples = []
    async with _started(runner):
        for i in range(count):
            first, second = jobs.kind.enqueue_many(store, [2 * i + 1, 2 * i + 3 + 2 * count])
            await jobs.start_of(2 * i + 3 + 2 * count)
            opened = _claimed(store, first) + PER
            samples.append(_claimed(store, second) - opened)
            await asyncio.sleep(PER)
    return samples


async def _cancel(store: jobtable.Store, jobs: _Jobs, count: int) -> list[float]:
    """An operator cancels the queued job that holds a sequence continuing past it.

    The predecessor waits in a paused queue no runner serves; the job it
    holds starts once the cancel commits.
    """
    paused = f"{jobs.queue}-held"
    continues = jobtable.Sequence(on_failure="continue")
    held = jobtable.Kind("wake-cancel-held", int, int, queue=paused, sequence=continues)
    store.pause(paused)
    runner = _runner(store, jobs, "bench-wake-cancel")
    samples = []
    async with _started(runner):
        for i in range(count):
            first = held.enqueue(store, 2 * i, sequence_key=f"c{i}")
            jobs.kind.enqueue(store, 2 * i + 1, sequence_key=f"c{i}")
            await asyncio.sleep(SETTLE)
            released = time.time()
            store.cancel(first)
            samples.append(await jobs.start_of(2 * i + 1) - released)
    return samples


def _claimed(store: jobtable.Store, job_id: str) -> float:
    started = store.inspect(job_id).started_at
    assert started is not None
    return started.timestamp()


MEASURES: dict[str, Case] = {
    "sequence": _sequence,
    "slot": _slot,
    "resume": _resume,
    "limit": _limit,
    "dependency": _dependency,
    "rate": _rate,
    "cancel": _cancel,
}


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: every case, plan.repeat rounds of samples each."""
    count = 20 if plan.quick else 50
    for round_ in range(plan.repeat):
        for case, run in MEASURES.items():
            log(f"wake-up: {LABELS[case]}, {count} releases, poll {POLL} s")
            try:
                jobs = _Jobs(case, round_)
                samples = [s * 1000 for s in asyncio.run(run(db.store, jobs, count))]
            finally:
                db.reset()
            results.add(f"wakeup.{case}.p50", percentile(samples, 50), "ms")
            results.add(f"wakeup.{case}.p99", percentile(samples, 99), "ms")
    results.counts["wakeup"] = count


def add_rows(table: Table, g: Callable[[str], Figure | None]) -> None:
    """The section's rows: each hold's release to start, p50 and p99 (no raw limit)."""
    for case in CASES:
        for q in ("p50", "p99"):
            table.add(
                f"wake-up {q}: {LABELS[case]}",
                cell(g(f"wakeup.{case}.{q}")),
                "-",
                "-",
                f"release to start; runners poll every {POLL:g} s",
            )


def targets(g: Callable[[str], Figure | None]) -> list[tuple[str, Figure | None, float]]:
    """Each case's p50 and p99 against TARGET_P50 and TARGET_P99 milliseconds."""
    return [
        (f"wake-up {q}, {LABELS[case]}: <= {want:g} ms", g(f"wakeup.{case}.{q}"), want)
        for case in CASES
        for q, want in (("p50", TARGET_P50), ("p99", TARGET_P99))
    ]
