"""The producer: claims ready jobs of one queue for the runner's free worker slots of it."""

import asyncio
import collections
import contextlib
import datetime
from collections.abc import Iterator, Sequence

from jobtable._engines.rows import ClaimedRow
from jobtable._runner.completer import Completer
from jobtable._runner.run_operations import (
    Finish,
    FlowClaim,
    HasFlow,
    NextRunAt,
    StageJobs,
    finish_and_claim,
)
from jobtable._runner.shared import Shared
from jobtable._values import timestamp

_SOONEST = 0.005
"""The shortest wait for a scheduled job, in seconds: one due now but not staged yet
is staged by the claim that follows."""


_PAST_OPENING = 0.001
"""How long after a rate window opens the claimer looks, in seconds: a wake a
rounding error early would find the window still full and wait _SOONEST more."""


class _Turn:
    """What a free worker waiting for a job is handed instead of one: the claimer's turn."""

    __slots__ = ("idle_first",)

    def __init__(self, *, idle_first: bool) -> None:
        # True after a claim that found fewer jobs than free workers: the
        # new claimer waits for jobs before it claims again.
        self.idle_first = idle_first


_CLAIM_NOW = _Turn(idle_first=False)
_IDLE_FIRST = _Turn(idle_first=True)

_Handed = ClaimedRow | _Turn | None


class Producer:
    """Fills the free worker slots of one queue with its ready jobs, in order, until stop.

    Jobs are claimed lowest priority first and oldest first within one, once
    their run_at has come, never more at once than there are free workers.

    The queue's workers take turns claiming: a worker that finishes its job
    when no other one claims becomes the claimer. It claims for every free
    worker, keeps the first job, hands the others to the workers waiting,
    and hands the turn on to one of them when workers are still free. So in
    the busy steady state a finished job's outcome and the claim of the next
    one go as one write, from the worker's own task, with no task between.
    With more than one worker, the claimer first lets the workers that finish
    in the same turn of the event loop add their outcomes, so they share the
    claim. A claim also stores the outcomes the completer holds for it. A
    failed claim is retried with capped backoff, its outcomes handed back to
    the completer, and recorded in contact. With no job for itself the
    claimer looks for jobs again when woken (an enqueue, or anything that
    may release a held job: an outcome of the queue's sequence or limited
    slot, a resume, new limits, a settled dependency), when the earliest
    scheduled job it saw is due, when the queue's rate window admits the
    next start, or every poll_interval seconds, the safety net. At stop the
    workers waiting get None.
    """

    def __init__(self, shared: Shared, completer: Completer, *, queue: str) -> None:
        self._store = shared.store
        self._runner = shared.name
        self.queue = queue
        """The name of the queue whose jobs it claims."""
        self._logger = shared.logger
        self._completer = completer
        self._contact = shared.contact
        self._trouble = shared.trouble
        self._poll_interval = shared.settings.poll_interval
        self._backoff = shared.settings.retry_backoff
        self._stop = shared.stop
        # An enqueue or a commit was seen since the claim under way began
        # (poke, from any thread); the claimer reads it before it waits.
        self._poked = False
        # True while the claimer waits for jobs: only then does a poke need
        # to wake it, through _wake, on the loop.
        self._waits_for_jobs = False
        self._wake = asyncio.Event()
        self._slots = 0
        # Workers without a job: the claimer and the workers waiting.
        self._free = 0
        self._claimer = False
        # True while the claimer's claim is under way (or about to start, as
        # the workers ending in its turn of the loop add their outcomes).
        self._claiming = False
        self._waiting: collections.deque[asyncio.Future[_Handed]] = collections.deque()
        # Jobs claimed for a worker that stopped waiting (cancelled): the next free one takes them.
        self._unhanded: collections.deque[ClaimedRow] = collections.deque()
        # When the next claim stages scheduled jobs first: at the earliest
        # run_at seen, and at least every poll interval, for the jobs other
        # processes schedule.
        self._stage_at: datetime.datetime | None = None
        # Whether the queue had flow control (a pause or a limit) at the last
        # look: its claims then go through FlowClaim.
        self._flow = False
        self._kinds: list[str] | None = None

    def start(self, slots: int) -> None:
        """Takes slots workers, each of which calls next_job until it returns None."""
        self._slots = slots

    def only(self, kinds: Sequence[str] | None) -> None:
        """Makes claims take only jobs of kinds; None (the default): jobs of any kind."""
        self._kinds = None if kinds is None else list(kinds)

    def poke(self) -> bool:
        """Notes that jobs may have come; safe from any thread.

        Returns whether the claimer waits for jobs, so that wake must follow
        on the event loop. Otherwise the claim under way, or the next one,
        looks anyway: one that finds fewer jobs than free workers claims
        again instead of waiting.
        """
        self._poked = True
        return self._waits_for_jobs

    def wake(self) -> None:
        """Makes the producer look for jobs now; call it on the event loop."""
        self._poked = True
        self._wake.set()

    def stop(self) -> None:
        """Ends the claims soon: next_job returns None from now on; call it on the event loop."""
        self._wake.set()
        if not self._claimer:
            # With nobody claiming every worker is busy; none waits.
            self._release()

    async def next_job(self, outcome: Finish | None = None) -> ClaimedRow | None:
        """Frees the calling worker's slot and returns its next job; None ends the worker.

        outcome, the outcome of the job it ran, goes to the completer: with
        the claim that follows when the worker claims or the claimer gathers,
        otherwise at once.
        """
        self._free += 1
        if self._unhanded or self._stop.is_set():
            if outcome is not None:
                self._completer.add(outcome, claim_follows=False)
            if not self._unhanded:
                return None
            # Claimed, a job runs even once stop began.
            self._free -= 1
            return self._unhanded.popleft()
        if self._claimer:
            if outcome is not None:
                self._freed_slot(outcome)
            handed = await self._wait_for_job()
            if not isinstance(handed, _Turn):
                return handed
            return await self._claim_turn(idle_first=handed.idle_first, gather=False)
        if outcome is not None:
            self._completer.add(outcome, claim_follows=True)
        return await self._claim_turn(idle_first=False, gather=self._slots > 1)

    def _freed_slot(self, outcome: Finish) -> None:
        """Hands outcome to the completer while another worker has the claimer's turn.

        While a claim is under way the outcome rides on a claim: the calling
        worker then waits for a job, so the claim finds it free when it ends
        and hands it a job or the next claim, which takes the outcome; a
        claim that hands the turn to nobody stores it at once (see
        _claim_turn). So a worker that finishes while another claims costs
        no commit of its own, whether its handler ended in the claimer's turn
        of the event loop or later (a ``def`` handler's thread, an async
        handler awaiting I/O). While the claimer waits for jobs instead, the
        outcome is stored at once: no claim may come before the next poll.

        Under flow control a claim can come back short because this runner's
        own jobs hold the queue's slots, and nothing else would wake it when
        one ends (PostgreSQL sends no notice for an outcome): the outcome
        then rides on the claimer's next claim, and the claimer waiting for
        jobs is woken, so it stores the outcome before it counts and looks
        again at once instead of at its next poll.
        """
        if not self._flow:
            self._completer.add(outcome, claim_follows=self._claiming)
            return
        self._completer.add(outcome, claim_follows=True)
        if self._waits_for_jobs:
            self.wake()
        else:
            self._poked = True

    async def _wait_for_job(self) -> _Handed:
        waiter: asyncio.Future[_Handed] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        return await waiter

    def _hand(self, handed: _Handed) -> bool:
        """Gives handed to the longest-waiting worker; False when none waits."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(handed)
                return True
        return False

    def _release(self) -> None:
        """Ends every waiting worker: the runner stops."""
        while self._hand(None):
            pass

    async def _claim_turn(self, *, idle_first: bool, gather: bool) -> ClaimedRow | None:
        """Claims for the free workers until one job is the caller's; None at stop."""
        self._claimer = True
        # Whether the turn went on to a waiting worker: then it is still taken.
        passed = False
        try:
            if gather:
                # The workers finishing in this turn of the loop add their
                # outcomes to the claim before it starts.
                with self._claim_under_way():
                    await asyncio.sleep(0)
            if idle_first:
                await self._idle()
            backoff = self._backoff.first
            while not self._stop.is_set():
                self._poked = False
                self._wake.clear()
                wanted = self._free
                # The outcomes of the jobs that freed the slots commit with the
                # claim that fills them: one statement, one commit.
                outcomes = self._completer.take()
                try:
                    with self._claim_under_way():
                        jobs = await self.claim(wanted, outcomes)
                except Exception as err:
                    self._contact.failed()
                    if outcomes:
                        # The completer retries them on their own.
                        self._completer.give_back(outcomes)
                    self._trouble.failed("claim jobs; retrying", err, backoff=backoff)
                    await self._stop.wait(backoff)
                    backoff = self._backoff.after(backoff)
                    continue
                self._trouble.landed()
                if not jobs:
                    await self._idle()
                    continue
                self._free -= len(jobs)
                for job in jobs[1:]:
                    if not self._hand(job):
                        self._unhanded.append(job)
                if self._free > 0:
                    # Workers freed during the claim, or the queue ran short:
                    # one of the waiting workers claims next.
                    passed = self._hand(_IDLE_FIRST if len(jobs) < wanted else _CLAIM_NOW)
                if not passed:
                    # No claim follows to take the outcomes freed meanwhile.
                    self._completer.flush()
                return jobs[0]
            self._completer.flush()
            self._release()
            return None
        finally:
            self._claimer = passed

    @contextlib.contextmanager
    def _claim_under_way(self) -> Iterator[None]:
        """Marks a claim under way for the block, so the outcomes freed meanwhile wait for it."""
        self._claiming = True
        try:
            yield
        finally:
            self._claiming = False

    async def _idle(self) -> None:
        """Waits for jobs, the outcomes waiting stored meanwhile: a wake, a due job or the poll."""
        if self._flow and self._poked:
            # A slot freed under flow control (see _freed_slot): the next
            # claim stores its outcome and claims at once.
            return
        self._completer.flush()
        seconds = await self._idle_wait()
        # Set before _poked is read, as poke sets _poked before it reads this:
        # a poke either is seen here or sees the claimer idle and wakes it.
        self._waits_for_jobs = True
        try:
            if not self._poked:
                await self._wait(self._wake, seconds)
        finally:
            self._waits_for_jobs = False

    async def claim(self, max_jobs: int, outcomes: Sequence[Finish] = ()) -> Sequence[ClaimedRow]:
        """Stores outcomes and claims up to max_jobs jobs, in one write.

        Returns the claimed jobs in claim order; the completer holds them
        until their outcomes are recorded. From the moment the claim is
        stamped until its jobs are held, the completer counts it as under
        way, so the heartbeat never takes its jobs for those of a claim
        whose reply was lost, however long it waited (for a lock, in a
        stopped process) between its stamp and its commit.
        """
        now = self._store.clock()
        with self._completer.claiming(now):
            changed, rows = await self._write_claim(now, max_jobs, outcomes)
            self._completer.claimed(rows)
        if outcomes:
            self._completer.recorded(outcomes, changed)
        if len(rows) > 1:
            return sorted(rows, key=lambda row: (row.priority, row.seq))
        return rows

    async def _write_claim(
        self, now: datetime.datetime, max_jobs: int, outcomes: Sequence[Finish]
    ) -> tuple[Sequence[str], Sequence[ClaimedRow]]:
        """Stages due jobs when it is time, then claims, stamped now.

        Returns the ids of the jobs the outcomes finished, and the rows claimed.
        """
        store = self._store
        if self._stage_at is None or now >= self._stage_at:
            await self.stage(now)
        stamp = timestamp(now)
        if self._flow:
            changed, rows, self._flow = await store.engine.awrite(
                FlowClaim(outcomes, self._runner, self.queue, max_jobs, stamp)
            )
            return changed, rows
        changed, rows = await store.engine.awrite(
            finish_and_claim(outcomes, self._runner, self.queue, max_jobs, stamp, self._kinds)
        )
        # The plain claim takes nothing from a queue with flow control: a
        # claim that found nothing looks whether the queue gained some, and
        # claims within it from now on. A queue without it pays one read
        # only when it ran dry, before its workers wait anyway.
        if not rows:
            self._flow = await store.engine.aread(HasFlow(self.queue))
            if self._flow:
                _, rows, self._flow = await store.engine.awrite(
                    FlowClaim((), self._runner, self.queue, max_jobs, stamp)
                )
        return changed, rows

    async def stage(self, now: datetime.datetime) -> None:
        """Makes the queue's scheduled jobs whose run_at has come ready to be claimed."""
        self._stage_at = now + datetime.timedelta(seconds=self._poll_interval)
        try:
            await self._store.engine.awrite(StageJobs(self.queue, timestamp(now)))
        except Exception:
            self._stage_at = None  # the claim that follows retries
            raise

    async def _idle_wait(self) -> float:
        """Seconds to wait for jobs: the poll interval, or less when a scheduled job is due
        or, under a rate, when its window admits the next start."""
        now = self._store.clock()
        try:
            run_at, opens = await self._store.engine.aread(
                NextRunAt(self.queue, self._flow, timestamp(now))
            )
        except Exception as err:
            self._trouble.failed("read the next run_at", err)
            return self._poll_interval
        seconds = self._poll_interval
        if opens is not None:
            # A claim the rate held back: the window's opening releases a job.
            seconds = min(seconds, opens + _PAST_OPENING)
        if run_at is not None:
            if self._stage_at is None or run_at < self._stage_at:
                self._stage_at = run_at
            seconds = min(seconds, (run_at - now).total_seconds())
        return min(self._poll_interval, max(seconds, _SOONEST))

    async def _wait(self, event: asyncio.Event, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)
