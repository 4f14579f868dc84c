"""A worker: takes the jobs its queue's producer claims and runs them one at a time."""

import asyncio

from jobtable._runner.completer import Completer
from jobtable._runner.executor import Executor
from jobtable._runner.operations import Finish
from jobtable._runner.producer import Producer
from jobtable._runner.shared import Stop


async def work(
    executor: Executor,
    completer: Completer,
    producer: Producer,
    running: set["asyncio.Task[None]"],
    stop: Stop,
    first: Finish | None = None,
) -> None:
    """Runs the jobs producer hands it, one at a time, until it hands None.

    While a job runs, the calling task is in running, so that the end of the
    grace period can cancel it. Each outcome goes back to producer with the
    request for the next job, so that it rides on the claim that follows
    when this worker or the claimer gathering claims next; first is the
    outcome of the job a worker this one replaces was running. A worker
    whose attempt the executor gave up on ends as soon as its handler does:
    its replacement took its slot, and the outcome was recorded already.
    """
    task = asyncio.current_task()
    assert task is not None
    job = await producer.next_job(first)
    while job is not None:
        running.add(task)
        try:
            outcome = await executor.run(job, producer.queue)
        except asyncio.CancelledError:
            if not stop.is_set() and not executor.given_up(task):
                raise
            # The grace period ran out: the job was recorded interrupted.
            return
        finally:
            running.discard(task)
        if executor.given_up(task):
            return
        if outcome is None:
            completer.abandon(job.id)
        job = await producer.next_job(outcome)


def start_queue(
    loop: asyncio.AbstractEventLoop,
    slots: int,
    executor: Executor,
    completer: Completer,
    producer: Producer,
    running: set["asyncio.Task[None]"],
    stop: Stop,
) -> list["asyncio.Task[None]"]:
    """Starts the slots workers of producer's queue on loop; returns their tasks."""
    queue = producer.queue
    return [
        loop.create_task(
            work(executor, completer, producer, running, stop),
            name=f"jobtable-worker-{queue}-{i}",
        )
        for i in range(slots)
    ]
