"""What each enqueue costs the process, by caller count: ``python -m bench._switches [ENGINE]``.

Concurrent enqueuers are limited by CPU, not by commits: their threads take
turns on the GIL, and every park, wake-up and wait for the GIL is a thread
switch. For one caller, 8 and 32 threads and 32 async tasks, each enqueuing
6,000 no-op jobs one a call on a fresh store (ENGINE ``sqlite``, the
default, or ``postgres``), this prints the rate and, per enqueue, the
process's voluntary and involuntary thread switches and its user and system
CPU (``getrusage``). The counts move far less with the machine's load than
the rates. To compare versions, run it with another revision's ``src``
first on PYTHONPATH (``git archive REV src | tar -x -C DIR``).
"""

import resource
import sys
import time
from collections.abc import Callable

from bench import _db, _enqueue
from bench._peer_jobtable import Jobtable
from bench._stats import Table

JOBS = 6000


def measure(engine: str) -> Table:
    """The table of one engine's figures."""
    queue = Jobtable(engine, _db.PG_URL)
    table = Table(
        f"{engine}: what one enqueue costs the process, {JOBS} jobs",
        ["callers", "jobs/s", "voluntary switches", "involuntary", "user CPU", "system CPU"],
    )
    ways: list[tuple[str, Callable[[], float]]] = [
        ("one caller", lambda: queue.enqueue_one(JOBS)),
        ("8 threads", lambda: queue.enqueue_threads(JOBS, 8)),
        ("32 threads", lambda: queue.enqueue_threads(JOBS, 32)),
        ("32 async tasks", lambda: _enqueue.enqueue_tasks(queue.db.store, JOBS, 32)),
    ]
    try:
        for label, enqueue in ways:
            before = resource.getrusage(resource.RUSAGE_SELF)
            begin = time.perf_counter()
            enqueue()
            elapsed = time.perf_counter() - begin
            after = resource.getrusage(resource.RUSAGE_SELF)
            table.add(
                label,
                f"{JOBS / elapsed:,.0f}",
                f"{(after.ru_nvcsw - before.ru_nvcsw) / JOBS:.1f}",
                f"{(after.ru_nivcsw - before.ru_nivcsw) / JOBS:.2f}",
                f"{(after.ru_utime - before.ru_utime) / JOBS * 1e6:.0f} µs",
                f"{(after.ru_stime - before.ru_stime) / JOBS * 1e6:.0f} µs",
            )
            queue.clear()
    finally:
        queue.close()
    return table


def main() -> None:
    engine = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    print(measure(engine).render(markdown=True))


if __name__ == "__main__":
    main()
