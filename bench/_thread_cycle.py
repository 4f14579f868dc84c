"""A plain ``def`` handler's cycle, and a design for it measured before it is built.

``python -m bench._thread_cycle [--engine sqlite|postgres] [--jobs N] [--rounds R]``

The runner's workers run on the event loop and each claim crosses to the
writer thread and back. The design measured here has none of that for a
plain ``def`` handler: a thread of its own per worker claims with the
runner's own write (``FinishAndClaim``, the previous outcome riding on it),
decodes the payload with the kind's codec, calls the handler, encodes its
result and goes round again. ``Writer.write`` runs a write in the calling
thread when no other is under way, so with one worker a job costs no hop at
all, and with four the threads take turns leading the group commit (on
PostgreSQL each thread writes on a pooled connection of its own).

It is an upper bound of the design, not the design: it leaves out what an
attempt costs beside decoding and encoding (the handler's context, its
timeout and cancel, telemetry, hooks), which the runner would still pay.
In interleaved rounds on one durable SQLite file (or a fresh PostgreSQL
schema) it prints, for 1 and 4 workers, the raw claim-and-finish cycle,
the runner's drain with an async and with a ``def`` no-op handler, and this
design's drain, each a share of the raw cycle beside it.
"""

import argparse
import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import jobtable
from bench import _databases, _db
from bench._end_to_end import drain_seconds
from bench._jobs import Ping, make_runner
from bench._plan import PAYLOADS
from jobtable._runner.run_operations import Finish, FinishAndClaim
from jobtable._values import timestamp

QUEUE = "default"
MAX_RESULT_BYTES = 1 << 20


def _noop(ctx: object, payload: Ping) -> int:
    """The ``def`` no-op handler every drain here runs; its result is stored."""
    return 0


def _enqueue(kinds_noop: jobtable.Kind[Ping, None], count: int) -> None:
    for _ in range(count // _db.BATCH):
        kinds_noop.enqueue_many(PAYLOADS)


async def _runner_drain(db: _db.Database, workers: int, *, plain: bool) -> float:
    """Seconds a runner of workers takes to run every job queued; plain: a def handler."""
    if plain:
        runner = jobtable.Runner(db.store, workers=workers, name=f"bench-def-w{workers}")
        runner.register("noop", _noop)
        started = None
    else:
        kinds = make_runner(db.store, workers=workers, name=f"bench-async-w{workers}")
        runner, started = kinds.runner, kinds.expect(db.count("queued"))
    return await drain_seconds(runner, db, started)


def _thread_worker(store: jobtable.Store, codec: Any, name: str) -> None:
    """One worker of the design: claim, run, and store the outcome with the next claim."""
    write, clock, keys = store.engine.write, store.clock, store.secret_keys
    outcomes: list[Finish] = []
    while True:
        _, rows = write(FinishAndClaim(outcomes, name, QUEUE, 1, timestamp(clock())))
        if not rows:
            return
        job = rows[0]
        payload = codec.decode_payload(job.payload, keys)
        result = _noop(None, payload)
        outcomes = [Finish.succeeded(job, codec.encode_result(result, MAX_RESULT_BYTES, keys))]


def _thread_drain(db: _db.Database, codec: Any, workers: int) -> float:
    """Seconds workers threads of the design take to run every job queued."""
    threads = [
        threading.Thread(target=_thread_worker, args=(db.store, codec, f"bench-thread-{i}"))
        for i in range(workers)
    ]
    begin = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - begin


def _round(db: _db.Database, jobs: int, workers: int, codec: Any) -> dict[str, float]:
    """One round of the four figures for workers, each on jobs freshly enqueued."""
    noop = make_runner(db.store, workers=1, name="bench-enqueuer").noop
    out = {"raw": jobs / db.raw_cycle(jobs, workers)}
    drains: dict[str, Callable[[], float]] = {
        "runner, async handler": lambda: asyncio.run(_runner_drain(db, workers, plain=False)),
        "runner, def handler": lambda: asyncio.run(_runner_drain(db, workers, plain=True)),
        "thread design": lambda: _thread_drain(db, codec, workers),
    }
    for label, drain in drains.items():
        db.reset()
        _enqueue(noop, jobs)
        out[label] = jobs / drain()
        if db.pending():
            raise RuntimeError(f"{label}: jobs left unfinished")
    db.reset()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._thread_cycle")
    parser.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    db = _databases.create(args.engine)
    try:
        probe = jobtable.Runner(db.store, workers=1, name="bench-codec")
        probe.register("noop", _noop)
        handler = probe._handlers.get("noop")
        assert handler is not None
        found: dict[int, dict[str, list[float]]] = {1: {}, 4: {}}
        for _ in range(args.rounds):
            for workers in (1, 4):
                for label, rate in _round(db, args.jobs, workers, handler.codec).items():
                    found[workers].setdefault(label, []).append(rate)
        _print(found)
    finally:
        db.close()


def _print(found: dict[int, dict[str, list[float]]]) -> None:
    print("| workers | drain | jobs/s (median) | share of the raw cycle |")
    print("|--:|---|--:|--:|")
    for workers, rates in found.items():
        raw = statistics.median(rates["raw"])
        for label, values in rates.items():
            rate = statistics.median(values)
            print(f"| {workers} | {label} | {rate:,.0f} | {rate / raw:.0%} |")


if __name__ == "__main__":
    main()
