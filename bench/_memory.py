"""Peak memory: a worker process's resident set with many queued jobs, beside raw SQL's.

The "memory" section of ``make bench``: a ``bench._child`` process opens the
store, enqueues the plan's jobs and runs them for a while, and reports its
peak RSS at each stage; a second does the same work with raw SQL.
"""

import json

from bench import _db
from bench._plan import DEADLINE, Plan, Results, log
from bench._processes import Child


def memory(db: _db.Database, plan: Plan, raw: bool) -> dict[str, float]:
    """A child process's peak RSS (MiB) at each stage and the jobs it ran; raw: no runner."""
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


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: the library's process, then the raw one."""
    log(f"peak memory with {plan.memory_jobs} queued jobs")
    for raw in (False, True):
        prefix = "mem.raw" if raw else "mem"
        found = memory(db, plan, raw)
        for stage in ("baseline", "opened", "enqueued", "running"):
            results.add(f"{prefix}.{stage}", found[stage], "MiB")
        results.add(f"{prefix}.ran", found["ran"], "jobs")
