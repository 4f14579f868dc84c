"""The floor a writer thread puts under a worker's cycle: one event-loop round trip.

A runner's claim runs on the SQLite writer thread, never on the event loop
(a commit waits for an fsync). Each commit then costs, beside its SQL, a
wake of the writer thread and a wake of the loop: on a machine whose cores
are woken by the hypervisor this round trip costs as much as a third of the
raw cycle. ``round_trip`` measures it with nothing else around it (a bare
lock and ``call_soon_threadsafe``, as the writer uses them), so the targets
table can say how close to the raw cycle any runner crossing threads once a
commit can come.
"""

import asyncio
import threading
import time


async def _round_trips(count: int) -> float:
    loop = asyncio.get_running_loop()
    wake = threading.Lock()
    wake.acquire()
    box: list[asyncio.Future[None] | None] = [None]

    def serve() -> None:
        while True:
            wake.acquire()
            future = box[0]
            if future is None:
                return
            loop.call_soon_threadsafe(future.set_result, None)

    thread = threading.Thread(target=serve, name="bench-hop")
    thread.start()
    try:
        start = time.perf_counter()
        for _ in range(count):
            box[0] = future = loop.create_future()
            wake.release()
            await future
        return time.perf_counter() - start
    finally:
        box[0] = None
        wake.release()
        thread.join()


def round_trip(count: int = 5000) -> float:
    """Microseconds of one event loop -> thread -> event loop round trip: the mean of count."""
    return asyncio.run(_round_trips(count)) / count * 1e6


def ceiling(raw_rate: float, jobs_per_commit: int, hop_us: float) -> float:
    """The most a cycle of raw_rate jobs/s reaches with one round trip of hop_us added a commit."""
    commit_us = jobs_per_commit / raw_rate * 1e6
    return commit_us / (commit_us + hop_us)
