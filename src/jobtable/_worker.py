"""A worker: takes the jobs its queue's producer claims and runs them one at a time."""

import asyncio
import threading

from ._completer import Completer
from ._engine import ClaimedRow
from ._executor import Executor
from ._producer import Producer


async def work(
    executor: Executor,
    completer: Completer,
    producer: Producer,
    jobs: "asyncio.Queue[ClaimedRow | None]",
    running: set["asyncio.Task[None]"],
    stopping: threading.Event,
) -> None:
    """Runs the jobs producer puts on jobs, one at a time, until it puts None.

    While a job runs, the calling task is in running, so that the end of the
    grace period can cancel it. Each outcome goes to completer, riding on the
    producer's next claim when it waits for this slot.
    """
    task = asyncio.current_task()
    assert task is not None
    while True:
        job = await jobs.get()
        if job is None:
            return
        running.add(task)
        try:
            outcome = await executor.run(job, producer.queue)
        except asyncio.CancelledError:
            if not stopping.is_set():
                raise
            # The grace period ran out: the job stays running and is
            # interrupted at the next start.
            return
        finally:
            running.discard(task)
        if outcome is None:
            completer.abandon(job.id)
        else:
            completer.add(outcome, claim_follows=producer.waits_for_slot)
        producer.freed()


def start_queue(
    loop: asyncio.AbstractEventLoop,
    slots: int,
    executor: Executor,
    completer: Completer,
    producer: Producer,
    running: set["asyncio.Task[None]"],
    stopping: threading.Event,
) -> list["asyncio.Task[None]"]:
    """Starts producer's task and its queue's slots workers on loop; returns their tasks."""
    jobs: asyncio.Queue[ClaimedRow | None] = asyncio.Queue()
    queue = producer.queue
    tasks = [loop.create_task(producer.run(slots, jobs), name=f"jobtable-producer-{queue}")]
    tasks += [
        loop.create_task(
            work(executor, completer, producer, jobs, running, stopping),
            name=f"jobtable-worker-{queue}-{i}",
        )
        for i in range(slots)
    ]
    return tasks
