"""End to end in other processes: worker processes drain the queue this one filled.

The "worker processes" section of ``make bench``: 1 to 4 processes of
``bench._child`` on SQLite (one writer: do more processes help?), 1 to 8 on
PostgreSQL, 4 workers each, on the same queue. ``Child`` speaks to
such a process line by line; the latency and memory sections start theirs
with it too.
"""

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jobtable
from bench import _db
from bench._jobs import make_runner
from bench._plan import DEADLINE, PAYLOADS, Plan, Results, failed, log

ROOT = Path(__file__).resolve().parent.parent


class Child:
    """A process of bench._child (or of module), spoken to line by line."""

    def __init__(self, args: dict[str, Any], module: str = "bench._child") -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )

    def expect(self, word: str) -> str:
        """The process's next line; with word, kills the process unless the line is word."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if word and line != word:
            self.proc.kill()
            raise RuntimeError(f"bench child said {line!r}, want {word!r}")
        return line

    def send(self, line: str) -> None:
        """Writes line to the process's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        """Tells the process to stop and waits for it to exit."""
        with contextlib.suppress(BrokenPipeError):
            self.send("stop")
        self.proc.wait(timeout=60)


def spawn_workers(db: _db.Database, count: int, **args: Any) -> Iterator[Child]:
    """count worker processes on db's target, 4 workers each, polling every 1 s; args override."""
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


def wait_pending(db: _db.Database, interval: float) -> None:
    """Waits until no job is queued or running, reading the table every interval seconds."""
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
    children = list(spawn_workers(db, procs))
    try:
        for child in children:
            child.expect("ready")
        begin = time.perf_counter()
        for child in children:
            child.send("go")
        wait_pending(db, 0.002)
        elapsed = time.perf_counter() - begin
        for child in children:
            child.expect("started")
    finally:
        for child in children:
            child.finish()
    failures = db.failed()
    db.reset()
    if failures:
        raise RuntimeError(f"{failures} jobs failed: see the log")
    return count / elapsed


PROCESSES = {"sqlite": (1, 2, 3, 4), "postgres": (1, 2, 4, 8)}
"""The worker process counts measured, by engine."""


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: PROCESSES, each on as many jobs as 4 workers ran end to end times procs / 2."""
    store = db.store
    base = results.counts.get("e2e.4", 2000 if plan.quick else 8000)
    for procs in PROCESSES[db.engine]:
        count = max(base, base * procs // 2 // _db.BATCH * _db.BATCH)
        results.counts[f"proc.{procs}"] = count
        log(f"end to end, {procs} worker processes x 4 workers, {count} jobs x {plan.repeat}")
        for _ in range(plan.repeat):
            try:
                results.add(f"proc.{procs}", processes(db, store, procs, count), "jobs/s")
            except RuntimeError as err:
                failed(results, f"end to end, {procs} processes", err)
