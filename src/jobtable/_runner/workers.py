"""The workers: each takes its queue's claimed jobs one at a time; the pool of them, and its end.

A worker whose handler ignores cancellation cannot be made to end; the pool
gives its slot to a new worker instead, and stops waiting for it.

The pool keeps the runner's worker tasks, ends the grace period and
replaces stuck handlers.
"""

import asyncio
import contextlib
import functools
import threading
from collections.abc import Sequence
from typing import Any

from jobtable._runner.completer import Completer
from jobtable._runner.executor import Executor
from jobtable._runner.producer import Producer
from jobtable._runner.registration import InterruptAttempts
from jobtable._runner.run_operations import Finish
from jobtable._runner.shared import JobLogger, Shared, Stop


class WorkerPool:
    """Runs the workers of every queue, and ends their attempts when the grace period does.

    At the end of the grace period the jobs still running are recorded as
    interrupted and their handlers cancelled. A handler the executor gives
    up on (it ignored its cancel for the cancel grace) loses its slot to a
    new worker, which takes its outcome along, and ``wait`` no longer waits
    for its task.
    """

    def __init__(
        self,
        shared: Shared,
        executor: Executor,
        completer: Completer,
        producers: Sequence[Producer],
    ) -> None:
        self._shared = shared
        self._executor = executor
        self._completer = completer
        self._producers = {p.queue: p for p in producers}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        # The workers running a job, for the end of the grace period to cancel.
        self._running: set[asyncio.Task[None]] = set()
        self._grace_over = False

    def start(
        self, loop: asyncio.AbstractEventLoop, queues: dict[str, int], kinds: Sequence[str] | None
    ) -> None:
        """Starts each queue's workers on loop; kinds, when given, are the only ones claimed."""
        self._loop = loop
        name = f"jobtable-{self._shared.name}"
        self._executor.start(sum(queues.values()), name, self._replace)
        self._executor.batches.slots = dict(queues)
        for queue, producer in self._producers.items():
            producer.start(queues[queue])
            producer.only(kinds)
            self._tasks += start_queue(
                loop,
                queues[queue],
                self._executor,
                self._completer,
                producer,
                self._running,
                self._shared.stop,
            )

    def notify_enqueued(self) -> None:
        """Wakes an idle worker to look for a new job; safe from any thread (see ``Runner``)."""
        self._notify(list(self._producers.values()))

    def notify_ready(self, queue: str) -> None:
        """Wakes an idle worker of queue, where a held job may have been released; any thread.

        A runner that does not serve queue does nothing.
        """
        producer = self._producers.get(queue)
        if producer is not None:
            self._notify([producer])

    def _notify(self, producers: list[Producer]) -> None:
        """Pokes producers, and wakes them on the loop when one of them waits for jobs."""
        loop = self._loop
        if loop is None or loop.is_closed() or not any([p.poke() for p in producers]):
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        wake = functools.partial(_wake, producers)
        if running is loop:
            wake()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(wake)

    def _replace(self, stuck: "asyncio.Task[Any]", queue: str, outcome: Finish | None) -> None:
        """Gives the slot of a worker whose handler would not end to a new worker.

        outcome, the stuck attempt's, goes with the new worker's first claim.
        """
        self._running.discard(stuck)
        if stuck in self._tasks:
            self._tasks.remove(stuck)
        assert self._loop is not None
        task = self._loop.create_task(
            work(
                self._executor,
                self._completer,
                self._producers[queue],
                self._running,
                self._shared.stop,
                first=outcome,
            ),
            name=f"jobtable-worker-{queue}-r{len(self._tasks)}",
        )
        self._tasks.append(task)
        self._changed.set()

    def end_grace(self) -> None:
        """Ends the grace period: records the jobs still running as interrupted, cancels them.

        Call it on the loop; a second call does nothing.
        """
        if self._grace_over:
            return
        self._grace_over = True
        self._executor.abandon()
        outcomes, attempts = self._executor.interrupt()
        for outcome in outcomes:
            self._completer.add(outcome, claim_follows=False)
        for task in self._running - attempts:
            task.cancel()

    async def wait(self) -> None:
        """Waits until every worker has ended, but those given up on."""
        while pending := [t for t in self._tasks if not t.done()]:
            self._changed.clear()
            changed = asyncio.ensure_future(self._changed.wait())
            try:
                await asyncio.wait([*pending, changed], return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
        for task in self._tasks:
            if not task.cancelled():
                task.exception()  # retrieved: a worker's error was logged where it arose

    async def run_next(self, kinds: Sequence[str] | None) -> str | None:
        """Claims the next ready job (of kinds, when given) and runs it in the calling task.

        Returns the job's id once its outcome is stored, or None when no job
        is ready (see ``Runner.run_next``).
        """
        stop = self._shared.stop
        if stop.is_set():
            stop.reach_loop()
        for producer in self._producers.values():
            producer.only(kinds)
            await producer.stage(self._shared.store.clock())
            jobs = await producer.claim(1)
            if jobs:
                break
        else:
            return None
        job = jobs[0]
        outcome = await self._executor.run(job, producer.queue)
        if outcome is not None:
            await self._completer.record([outcome])
        self._completer.abandon(job.id)
        return job.id

    def last_words(self, wait: float) -> None:
        """Before the process ends: logs the handlers that would not stop, interrupts their jobs.

        Safe from any thread, whatever the event loop is doing: the jobs
        claimed and not recorded are interrupted, each while its claim holds,
        in a write given up to wait seconds.
        """
        shared = self._shared
        for job, _ in self._executor.running():
            JobLogger(shared.logger, job.id, job.kind, job.attempt).error(
                "the handler would not stop (it blocks the event loop or ignores cancellation)"
            )
        held = self._completer.held_attempts()
        if held:
            interrupt = InterruptAttempts(held, shared.store.clock)
            writing = threading.Thread(target=shared.store.engine.write, args=(interrupt,))
            writing.daemon = True
            writing.start()
            writing.join(wait)


def _wake(producers: list[Producer]) -> None:
    for producer in producers:
        producer.wake()


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
