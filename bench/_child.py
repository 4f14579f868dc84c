"""The benchmark's other processes: ``python -m bench._child '<json>'``.

Modes:

- ``worker``: opens the store, registers the benchmark's kinds on a runner of
  its own name, prints ``ready``, waits for a line on stdin, starts the
  runner, prints ``started``, answers each ``cpu`` line with the CPU seconds
  the process has used so far, and stops and exits at any other line (or
  EOF). With ``"watch": false`` a SQLite store is opened without its
  cross-process watch, so the runner finds other processes' jobs by polling.
- ``memory``: enqueues ``jobs`` queued jobs with enqueue_many, then runs them
  for up to ``seconds``, and prints its peak RSS (``resource.getrusage``) at
  each stage as one JSON line.
- ``memory-raw``: the same amount of work with raw SQL and no runner.
"""

import asyncio
import json
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import jobtable
from bench import _databases, _db
from bench._jobs import Ping, make_runner
from jobtable._engines.sqlite.engine import SQLiteEngine


def cpu_seconds() -> float:
    """The CPU time this process has used so far, user and system, its threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    """This process's peak resident set so far, in MiB (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _serve(kinds_runner: jobtable.Runner) -> None:
    loop = asyncio.get_running_loop()
    await kinds_runner.start()
    print("started", flush=True)
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "cpu":
        print(f"{cpu_seconds():.6f}", flush=True)
    kinds_runner.stop()
    await kinds_runner.wait()


def _open(target: str, *, watch: bool) -> jobtable.Store:
    if watch or target.startswith(("postgresql:", "postgres:")):
        return jobtable.Store.open(target)
    return jobtable.Store(SQLiteEngine.open(target, watch=False), target=target)


def worker(args: dict[str, Any]) -> None:
    store = _open(args["target"], watch=args.get("watch", True))
    kinds = make_runner(
        store, workers=args["workers"], name=args["name"], poll_interval=args["poll_interval"]
    )
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        asyncio.run(_serve(kinds.runner))
    finally:
        store.close()


async def _drain(runner: jobtable.Runner, seconds: float, pending: Callable[[], bool]) -> float:
    start = time.perf_counter()
    await runner.start()
    deadline = start + seconds
    # Reads the table every 50 ms: nothing in the runner tells when the queue is empty.
    while time.perf_counter() < deadline and await asyncio.to_thread(pending):  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    runner.stop()
    await runner.wait()
    return time.perf_counter() - start


def memory(args: dict[str, Any]) -> None:
    count: int = args["jobs"]
    out: dict[str, float] = {"baseline": peak_rss_mib()}
    database = _databases.attach(args["engine"], args["target"])
    store = database.store
    kinds = make_runner(store, workers=args["workers"], name="bench-memory")
    out["opened"] = peak_rss_mib()
    payloads = [Ping() for _ in range(_db.BATCH)]
    for _ in range(count // _db.BATCH):
        kinds.noop.enqueue_many(payloads)
    out["enqueued"] = peak_rss_mib()
    try:
        out["seconds"] = asyncio.run(_drain(kinds.runner, args["seconds"], database.pending))
        out["ran"] = float(database.finished())
    finally:
        database.close()
    out["running"] = peak_rss_mib()
    print(json.dumps(out), flush=True)


def memory_raw(args: dict[str, Any]) -> None:
    count: int = args["jobs"]
    out: dict[str, float] = {"baseline": peak_rss_mib()}
    database = _databases.attach(args["engine"], args["target"])
    out["opened"] = peak_rss_mib()
    database.raw_insert(count, 1000)
    out["enqueued"] = peak_rss_mib()
    deadline = time.perf_counter() + args["seconds"]
    ran = 0
    while time.perf_counter() < deadline and ran < count:
        database.raw_work(_db.BATCH)
        ran += _db.BATCH
    out["ran"] = float(ran)
    out["running"] = peak_rss_mib()
    database.close()
    print(json.dumps(out), flush=True)


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    {"worker": worker, "memory": memory, "memory-raw": memory_raw}[args["mode"]](args)


if __name__ == "__main__":
    main()
