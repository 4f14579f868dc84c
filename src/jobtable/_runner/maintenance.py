"""Maintenance: the runner's registration and heartbeat, crash recovery and retention."""

import datetime
import time
from collections.abc import Callable

from jobtable._engines.base import Queries
from jobtable._errors import StoreError
from jobtable._operator.admin import PruneJobs
from jobtable._runner.completer import Held
from jobtable._runner.missing_keys import MissingKeys
from jobtable._runner.process import ProcessId, this_process
from jobtable._runner.process_watch import INTERRUPTED_FATE, PROBE_INTERVAL, ProcessWatch, log_gone
from jobtable._runner.registration import (
    PRUNE_BATCH,
    PRUNE_PAUSE,
    KeyReport,
    Maintain,
    Maintained,
    StartRunner,
)
from jobtable._runner.shared import Shared

RESTARTED = (
    "interrupted %d jobs an earlier runner of this name left running, by restart: "
    + INTERRUPTED_FATE
)
"""The warning that counts the jobs start interrupted for an earlier runner of the name."""

DEAD_RUNNERS = "interrupted %d jobs of dead runners: " + INTERRUPTED_FATE
"""The warning that counts the jobs a heartbeat interrupted for runners whose lease expired."""

NEVER_RECEIVED = (
    "put back %d jobs this runner claimed but never received (their claim's reply was lost): "
    "no handler ran them, so each is queued again with its attempt unused"
)
"""The warning that counts the jobs of claims whose reply was lost, put back after the lease."""


class Maintenance:
    """Keeps a runner known to its peers, interrupts the jobs dead runners left, and prunes.

    An interrupted job is retried while attempts remain, else failed with
    MESSAGE_INTERRUPTED. begin registers the runner at start; run then
    renews its lease every third of it until stop, and on each round
    interrupts the running jobs of runners whose lease expired, puts back
    (attempts unused) the jobs this runner claimed but never received, and
    deletes finished jobs older
    than retention: PRUNE_BATCH a write, one write after another while each
    comes back full, for at most half the time between rounds, so pruning
    keeps up with any rate of finished jobs up to what the store can
    delete. held returns the jobs the runner has (see ``Held``). It
    interrupts other runners' jobs by their lease only once contact says
    this runner's own writes have landed promptly for a lease (see
    ``StoreContact``), and records in contact how each of its own writes
    went. The jobs of a runner of this host whose process is gone it
    interrupts at once: at begin, at each round, and between rounds through
    its ``ProcessWatch``. At begin and each round it also gathers the
    planner's statistics of the jobs table when they describe a far smaller
    table (PostgreSQL; see ``_refresh_statistics``).
    """

    def __init__(
        self, shared: Shared, *, held: Callable[[], Held], missing_keys: MissingKeys
    ) -> None:
        self._store = shared.store
        self._runner = shared.name
        self._logger = shared.logger
        self._lease = shared.settings.lease
        self._retention = shared.settings.retention
        self._signal_retention = shared.settings.signal_retention
        self._held = held
        self._missing_keys = missing_keys
        self._reported: str | None = None
        self._contact = shared.contact
        self._trouble = shared.trouble
        self._stop = shared.stop
        self._me: ProcessId | None = None
        self._watch = ProcessWatch(shared.store, shared.name, shared.logger)

    async def begin(self) -> None:
        """Registers the runner and interrupts the jobs it and dead runners left running."""
        asked = time.monotonic()
        self._me = me = this_process()
        lease = datetime.timedelta(seconds=self._lease)
        started = await self._store.engine.awrite(
            StartRunner(self._runner, lease, self._store.clock, me)
        )
        self._contact.landed(asked, time.monotonic())
        self._watch.know(me, started.peers)
        log_gone(self._logger, self._runner, started.gone)
        extra = {"runner": self._runner}
        if started.live_namesake is not None:
            self._logger.warning(
                "a runner named %r beat at %s, within its lease: if that process still runs, "
                "its jobs are now failed as interrupted; give each worker process its own name",
                self._runner,
                started.live_namesake,
                extra=extra,
            )
        if started.interrupted:
            self._logger.warning(
                RESTARTED,
                started.interrupted,
                extra={"count": started.interrupted, **extra},
            )
        await self._refresh_statistics()

    async def run(self) -> None:
        """Renews the lease, fails dead runners' jobs and prunes old ones, until stop.

        Between rounds its ProcessWatch ends the runners of this host whose
        process ended, as the kernel tells it; those it cannot be told
        about it probes every PROBE_INTERVAL seconds.
        """
        try:
            await self._beat()
        finally:
            await self._watch.close()

    async def _beat(self) -> None:
        interval = self._lease / 3
        next_round = time.monotonic() + interval
        while not self._stop.is_set():
            wait = next_round - time.monotonic()
            if self._watch.watching:
                wait = min(wait, PROBE_INTERVAL)
            if await self._stop.wait(max(wait, 0)):
                return
            if time.monotonic() < next_round:
                await self._watch.probe()
                continue
            try:
                await self._round()
            except Exception as err:
                self._trouble.failed("runner heartbeat", err)
            else:
                self._trouble.landed()
            next_round = time.monotonic() + interval

    async def _prune_rest(self, done: Maintained, until: float) -> None:
        """Deletes further batches of old finished jobs while the last was full, until until.

        Each batch is a write of its own, so no write holds the store for
        long, and PRUNE_PAUSE passes between two: a SQLite writer that
        commits again at once keeps the lock from other processes, which
        sleep between their tries for it.
        """
        pruned = done.pruned
        while (
            done.prune_before is not None
            and pruned >= PRUNE_BATCH
            and time.monotonic() < until
            and not await self._stop.wait(PRUNE_PAUSE)
        ):
            pruned = await self._store.engine.awrite(PruneJobs(done.prune_before, PRUNE_BATCH))

    async def _round(self) -> None:
        """One heartbeat: renews the lease, fails stale jobs when it may judge, prunes."""
        lease = datetime.timedelta(seconds=self._lease)
        started = time.monotonic()
        maintain = Maintain(
            self._runner,
            self._held(),
            lease,
            self._retention,
            clock=self._store.clock,
            contact=self._contact,
            started=started,
            me=self._me,
            missing_keys=KeyReport(self._missing_keys.report(), self._reported),
            signal_retention=self._signal_retention,
        )
        try:
            done = await self._store.engine.awrite(maintain)
        except Exception:
            self._contact.failed()
            raise
        self._contact.landed(started, time.monotonic())
        self._reported = maintain.missing_keys.now
        self._watch.know(self._me, done.peers)
        log_gone(self._logger, self._runner, done.gone)
        extra = {"runner": self._runner}
        if done.lost_lease:
            self._logger.warning("runner lost its lease; registering again", extra=extra)
        if done.dead:
            self._logger.warning(
                DEAD_RUNNERS,
                done.dead,
                extra={"count": done.dead, **extra},
            )
        if done.lost:
            self._logger.warning(
                NEVER_RECEIVED,
                done.lost,
                extra={"count": done.lost, **extra},
            )
        await self._prune_rest(done, started + self._lease / 6)
        await self._refresh_statistics()

    async def _refresh_statistics(self) -> None:
        """Gathers the planner's statistics of jobs if they describe a far smaller table.

        PostgreSQL plans on statistics that autovacuum gathers a minute or
        more after a burst of jobs, and never where it is off; until then
        every queued job looks rare and the claim's indexes all look as
        cheap, so a partitioned claim over 20,000 queued jobs took 0.8 s
        instead of 15 ms. The check is a read of the server's counters; a
        vacuum that holds the table makes the gathering give up, and the
        next round tries again.
        """
        try:
            if await self._store.engine.aread(_statistics_stale):
                await self._store.engine.awrite(_analyze_jobs)
        except StoreError as err:
            self._logger.info(
                "planner statistics not gathered: %s", err, extra={"runner": self._runner}
            )


def _statistics_stale(q: Queries) -> bool:
    return q.jobs_statistics_stale()


def _analyze_jobs(q: Queries) -> None:
    q.analyze_jobs()
