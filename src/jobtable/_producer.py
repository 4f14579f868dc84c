"""The producer: claims ready jobs of one queue for the runner's free worker slots of it."""

import asyncio
import contextlib
import datetime
import logging
import threading
from collections.abc import Sequence

from ._backoff import Backoff
from ._completer import Completer
from ._contact import StoreContact
from ._engine import ClaimedRow
from ._ops import Finish, FinishAndClaim, NextRunAt, StageJobs
from ._store import Store
from ._values import timestamp

_SOONEST = 0.005
"""The shortest wait for a scheduled job, in seconds: one due now but not staged yet
is staged by the claim that follows."""


class Producer:
    """Fills the free worker slots of one queue with its ready jobs, in order, until stop.

    Jobs are claimed lowest priority first and oldest first within one, once
    their run_at has come.

    It hands each claimed job to the workers' queue, and then, at stop, one
    None per worker. A claim also stores the outcomes the completer holds for
    it, so a worker's outcome commits in the statement that claims the job
    filling its slot. A failed claim is retried with capped backoff, its
    outcomes handed back to the completer, and recorded in contact. It looks
    for jobs again when woken (an enqueue), when a slot frees, when the
    earliest scheduled job it saw is due, or every poll_interval seconds.
    """

    def __init__(
        self,
        store: Store,
        runner: str,
        logger: logging.Logger,
        completer: Completer,
        contact: StoreContact,
        *,
        queue: str,
        poll_interval: float,
        backoff: Backoff,
        stopping: threading.Event,
        astopping: asyncio.Event,
    ) -> None:
        self._store = store
        self._runner = runner
        self.queue = queue
        """The name of the queue whose jobs it claims."""
        self._logger = logger
        self._completer = completer
        self._contact = contact
        self._poll_interval = poll_interval
        self._backoff = backoff
        self._stopping = stopping
        self._astopping = astopping
        self._wake = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._free = 0
        # True while the producer waits for a free slot: a worker that
        # finishes frees one, so its outcome can ride on the claim that follows.
        self._waits_for_slot = False
        # When the next claim stages scheduled jobs first: at the earliest
        # run_at seen, and at least every poll interval, for the jobs other
        # processes schedule.
        self._stage_at: datetime.datetime | None = None

    @property
    def waits_for_slot(self) -> bool:
        """True while every slot is busy and the producer waits for one to free."""
        return self._waits_for_slot

    def wake(self) -> None:
        """Makes the producer look for jobs now; call it on the event loop."""
        self._wake.set()

    def freed(self) -> None:
        """A worker finished its job and its slot is free; call it on the event loop."""
        self._free += 1
        self._slot_freed.set()

    def stop(self) -> None:
        """Ends run soon: it claims nothing more; call it on the event loop."""
        self._wake.set()
        self._slot_freed.set()

    async def claim(self, max_jobs: int, outcomes: Sequence[Finish] = ()) -> Sequence[ClaimedRow]:
        """Stores outcomes and claims up to max_jobs jobs, in one write.

        Returns the claimed jobs in claim order; the completer holds them
        until their outcomes are recorded.
        """
        store = self._store
        now = store.clock()
        if self._stage_at is None or now >= self._stage_at:
            await self.stage(now)
        changed, rows = await store.engine.awrite(
            FinishAndClaim(outcomes, self._runner, self.queue, max_jobs, store.now())
        )
        self._completer.claimed(rows)
        if outcomes:
            self._completer.recorded(outcomes, changed)
        if len(rows) > 1:
            return sorted(rows, key=lambda row: (row.priority, row.seq))
        return rows

    async def stage(self, now: datetime.datetime) -> None:
        """Makes the queue's scheduled jobs whose run_at has come ready to be claimed."""
        self._stage_at = now + datetime.timedelta(seconds=self._poll_interval)
        try:
            await self._store.engine.awrite(StageJobs(self.queue, timestamp(now)))
        except Exception:
            self._stage_at = None  # the claim that follows retries
            raise

    async def _idle_wait(self) -> float:
        """Seconds to wait for jobs: the poll interval, or less when a scheduled job is due."""
        try:
            run_at = await self._store.engine.aread(NextRunAt(self.queue))
        except Exception:
            self._logger.exception("read the next run_at", extra={"runner": self._runner})
            return self._poll_interval
        if run_at is None:
            return self._poll_interval
        at = datetime.datetime.fromisoformat(run_at)
        if self._stage_at is None or at < self._stage_at:
            self._stage_at = at
        due = at - self._store.clock()
        return min(self._poll_interval, max(due.total_seconds(), _SOONEST))

    async def run(self, slots: int, queue: "asyncio.Queue[ClaimedRow | None]") -> None:
        """Claims jobs for slots workers, putting them on queue, until stop."""
        self._free = slots
        backoff = self._backoff.first
        while not self._stopping.is_set():
            if self._free <= 0:
                self._slot_freed.clear()
                self._waits_for_slot = True
                try:
                    await self._slot_freed.wait()
                finally:
                    self._waits_for_slot = False
                continue
            self._wake.clear()
            wanted = self._free
            # The outcomes of the jobs that freed the slots commit with the
            # claim that fills them: one statement, one commit.
            outcomes = self._completer.take()
            try:
                jobs = await self.claim(wanted, outcomes)
            except Exception:
                self._contact.failed()
                if outcomes:
                    # The completer retries them on their own.
                    self._completer.give_back(outcomes)
                self._logger.exception(
                    "claim jobs; retrying", extra={"runner": self._runner, "backoff": backoff}
                )
                await self._wait(self._astopping, backoff)
                backoff = self._backoff.after(backoff)
                continue
            backoff = self._backoff.first
            for job in jobs:
                self._free -= 1
                queue.put_nowait(job)
            if len(jobs) < wanted:
                self._completer.flush()
                await self._wait(self._wake, await self._idle_wait())
        self._completer.flush()
        for _ in range(slots):
            queue.put_nowait(None)

    async def _wait(self, event: asyncio.Event, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)
