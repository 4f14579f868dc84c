"""The completer: owns the outcomes waiting to be stored and the jobs claimed but not recorded.

An outcome rides on the producer's next claim when one is about to follow
(one statement, one commit); otherwise the completer stores it at once, with
the outcomes of the other workers that finished meanwhile (group commit).
"""

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from jobtable._engines.rows import ClaimedRow
from jobtable._errors import StoreError
from jobtable._job import MESSAGE_INTERNAL
from jobtable._runner.run_operations import Finish, finish_and_claim
from jobtable._runner.shared import JobLogger, Shared


def _logger_of(logger: logging.Logger, outcome: Finish) -> JobLogger:
    """logger, for records about the attempt outcome ends."""
    return JobLogger(logger, outcome.job_id, outcome.kind, outcome.outcome.attempt)


RETRIED_REFUSAL = (
    "record job outcomes: %d jobs were no longer running under their claim when their "
    "outcome was written again after a failed write; expected: the failed write had "
    "most likely stored them before its connection was lost (had their claim ended "
    "instead, the heartbeat warns that the runner lost its lease)"
)
"""What the completer logs, as information, once per write, for outcomes refused after a retry."""


class Held(NamedTuple):
    """The jobs a runner has, as its heartbeat reads them on the event loop."""

    ids: frozenset[str]
    """The jobs claimed and not yet recorded."""
    since: datetime.datetime
    """From when on a job's claim may still be on its way: the stamp of the oldest claim
    under way, or the time of the reading when none is. A job whose claim is stamped
    at or after it may run under the runner's name before it is among ids."""


class Completer:
    """Stores jobs' outcomes, retrying a transient database error with capped backoff.

    While the runner lives it retries a transient error (StoreError.transient:
    a lost connection, a lock) until the write lands: the runner keeps its
    lease, so no other runner would ever fail the jobs, and giving up would
    leave them running forever. An outcome the database refuses for good (a
    data or constraint error) is replaced once by MESSAGE_INTERNAL, the cause
    logged; if even that is refused, the job is failed as interrupted once
    its claim is older than the lease. Only once stop has begun does it give
    up on a transient error after give_up_after tries; the jobs then stay
    running and the next start fails them as interrupted. Each write is
    fenced by its claim: a job that is no longer running under its claim is
    left as it is, and that is logged: as an error when no write of its
    outcome had failed before, otherwise once, as information
    (``RETRIED_REFUSAL``), since a write that failed may have committed
    (its connection lost after the commit, or, on PostgreSQL, the claim that
    follows a workflow's outcomes in a statement of its own refused). A
    failed write is recorded in contact.
    """

    def __init__(self, shared: Shared) -> None:
        self._store = shared.store
        self._runner = shared.name
        self._logger = shared.logger
        self._stop = shared.stop
        self._backoff = shared.settings.retry_backoff
        self._give_up_after = shared.settings.give_up_after
        self._contact = shared.contact
        self._trouble = shared.trouble
        self._outcomes: list[Finish] = []
        self._task: asyncio.Task[None] | None = None
        # The jobs this runner claimed and has not recorded, by id: the
        # maintenance fails a job running under this name that is not here.
        self._held: dict[str, int] = {}
        # The stamps of the claims under way, one entry a claim: a claim
        # commits before its reply brings its jobs into _held.
        self._claims: list[datetime.datetime] = []
        # The jobs whose outcome went through a write that raised, which may
        # have stored it: a later refusal of it is expected.
        self._retried: set[str] = set()

    # The jobs in flight.

    @contextlib.contextmanager
    def claiming(self, stamp: datetime.datetime) -> Iterator[None]:
        """Marks a claim stamped stamp under way for the block, which notes its jobs (claimed).

        Enter it before the claim's first await, with the stamp just read:
        held then never misses a job this claim gives, whether its reply
        comes back before the block ends or is lost.
        """
        self._claims.append(stamp)
        try:
            yield
        finally:
            self._claims.remove(stamp)

    def claimed(self, rows: Sequence[ClaimedRow]) -> None:
        """Notes jobs a claim gave this runner."""
        for row in rows:
            self._held[row.id] = row.attempt

    def abandon(self, job_id: str) -> None:
        """Forgets a job whose outcome will not be stored: it stays running."""
        self._held.pop(job_id, None)

    def held(self) -> Held:
        """The jobs claimed and not yet recorded, and since when claims may be on their way.

        Call it on the event loop, where claims begin and end: a job that
        is not among the ids was claimed at or after since, or its claim
        ended without its reply (a connection dropped at COMMIT).
        """
        return Held(frozenset(self._held), min([*self._claims, self._store.clock()]))

    def held_attempts(self) -> dict[str, int]:
        """The jobs claimed and not yet recorded, with their attempts; safe from any thread."""
        while True:
            try:
                return dict(self._held)
            except RuntimeError:  # changed size as the loop thread went on: read again
                continue

    # The outcome buffer.

    def add(self, outcome: Finish, *, claim_follows: bool) -> None:
        """Queues a job's outcome to be stored; the worker moves on at once.

        With claim_follows (the producer waits for the slot this outcome
        frees), the outcome waits for that claim, which takes it. Otherwise
        the completer stores it at once. drain waits for either. An outcome
        recorded already (a sleep's or a wait's) is not stored again: its job
        is forgotten.
        """
        if outcome.recorded:
            self.abandon(outcome.job_id)
            return
        self._outcomes.append(outcome)
        if not claim_follows:
            self.flush()

    def take(self) -> list[Finish]:
        """Hands every waiting outcome to a claim, which stores them in its statement."""
        outcomes, self._outcomes = self._outcomes, []
        return outcomes

    def give_back(self, outcomes: Sequence[Finish]) -> None:
        """Takes back the outcomes of a claim that failed, and stores them on their own.

        The claim may have stored them before it failed: a refusal of them
        afterwards is expected (see ``recorded``).
        """
        self._retried.update(o.job_id for o in outcomes)
        self._outcomes[:0] = outcomes
        self.flush()

    def flush(self) -> None:
        """Starts storing the waiting outcomes, unless that is under way or none waits."""
        if self._outcomes and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._complete(), name="jobtable-completer")

    async def drain(self) -> None:
        """Waits until no outcome is being stored."""
        while self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)

    async def _complete(self) -> None:
        while self._outcomes:
            batch, self._outcomes = self._outcomes, []
            await self.record(batch)

    async def record(self, outcomes: Sequence[Finish]) -> None:
        """Stores outcomes in one write, retrying; then forgets their jobs.

        Outcomes recorded already (a sleep's or a wait's) are only forgotten.
        """
        for outcome in outcomes:
            if outcome.recorded:
                self.abandon(outcome.job_id)
        outcomes = [outcome for outcome in outcomes if not outcome.recorded]
        if not outcomes:
            return
        changed = None
        try:
            changed = await self._write(outcomes)
        finally:
            self.recorded(outcomes, changed)

    def recorded(self, outcomes: Sequence[Finish], changed: Sequence[str] | None) -> None:
        """Forgets the outcomes' jobs, logging each one whose claim no longer held.

        changed holds the ids of the jobs the outcomes finished; None (given
        up, or not stored) logs nothing more.
        """
        stored = None if changed is None else set(changed)
        expected = []
        for outcome in outcomes:
            job_id = outcome.job_id
            self._held.pop(job_id, None)
            retried = job_id in self._retried
            self._retried.discard(job_id)
            if stored is None or job_id in stored:
                continue
            if retried:
                expected.append(job_id)
                continue
            JobLogger(self._logger, job_id, outcome.kind, outcome.outcome.attempt).error(
                "record job outcome: job is not running under this claim"
            )
        if expected:
            extra = {"jobs": expected, "count": len(expected), "runner": self._runner}
            self._logger.info(RETRIED_REFUSAL, len(expected), extra=extra)

    async def _write(self, outcomes: Sequence[Finish]) -> list[str] | None:
        """Returns the ids of the jobs the outcomes finished, or None when it gave up."""
        delay = self._backoff.first
        tries = 0
        while True:
            try:
                changed, _ = await self._store.engine.awrite(
                    finish_and_claim(outcomes, self._runner, "", 0, self._store.now())
                )
                self._trouble.landed()
                return changed
            except Exception as err:
                self._contact.failed()
                self._retried.update(o.job_id for o in outcomes)
                if len(outcomes) > 1:
                    # One bad outcome must not hold the others back: each is
                    # retried on its own.
                    ids: list[str] = []
                    for outcome in outcomes:
                        alone = await self._write([outcome])
                        # One given up was logged already; counting it as
                        # stored keeps it from being logged again as fenced off.
                        ids += [outcome.job_id] if alone is None else alone
                    return ids
                tries += 1
                extra = {"jobs": [o.job_id for o in outcomes], "runner": self._runner}
                if not (isinstance(err, StoreError) and err.transient):
                    # The database refused this outcome itself (a data or
                    # constraint error): the same write would fail for ever.
                    [outcome] = outcomes
                    if outcome.error == MESSAGE_INTERNAL:
                        self._logger.exception(
                            "record job outcome: the database refused it; giving up, the job "
                            "fails as interrupted once its claim is older than the lease",
                            extra=extra,
                        )
                        return None
                    JobLogger(
                        self._logger, outcome.job_id, outcome.kind, outcome.outcome.attempt
                    ).error(
                        "record job outcome: the database refused it; failing the job with "
                        "the internal message",
                        exc_info=True,
                    )
                    outcomes = [outcome.refused()]
                    continue
                if tries >= self._give_up_after and self._stop.is_set():
                    self._logger.exception(
                        "record job outcomes; giving up as the runner stops, the jobs stay "
                        "running and fail at the next start",
                        extra=extra,
                    )
                    return None
                self._trouble.failed("record job outcomes; retrying", err, **extra)
                await asyncio.sleep(delay)
                delay = self._backoff.after(delay)
