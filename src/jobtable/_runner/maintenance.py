"""Maintenance: the runner's registration and heartbeat, crash recovery and retention."""

import datetime
import time
from collections.abc import Callable

from jobtable._runner.operations import Maintain, StartRunner
from jobtable._runner.shared import Shared


class Maintenance:
    """Keeps a runner known to its peers, fails the jobs dead runners left, and prunes.

    begin registers the runner at start; run then renews its lease every
    third of it until stop, and on each round fails the running jobs of
    runners whose lease expired, fails the jobs this runner claimed but
    never received, and deletes finished jobs older than retention. held
    returns the ids of the jobs the runner's workers have. It fails other
    runners' jobs only once contact says this runner's own writes have
    landed promptly for a lease (see ``StoreContact``), and records in
    contact how each of its own writes went.
    """

    def __init__(self, shared: Shared, *, held: Callable[[], frozenset[str]]) -> None:
        self._store = shared.store
        self._runner = shared.name
        self._logger = shared.logger
        self._lease = shared.settings.lease
        self._retention = shared.settings.retention
        self._held = held
        self._contact = shared.contact
        self._stop = shared.stop

    async def begin(self) -> None:
        """Registers the runner and fails the jobs it and dead runners left running."""
        asked = time.monotonic()
        started = await self._store.engine.awrite(
            StartRunner(self._runner, datetime.timedelta(seconds=self._lease), self._store.clock)
        )
        self._contact.landed(asked, time.monotonic())
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
                "failed %d jobs interrupted by restart",
                started.interrupted,
                extra={"count": started.interrupted, **extra},
            )

    async def run(self) -> None:
        """Renews the lease, fails dead runners' jobs and prunes old ones, until stop."""
        interval = self._lease / 3
        while not self._stop.is_set():
            if await self._stop.wait(interval):
                return
            try:
                await self._round()
            except Exception:
                self._logger.exception("runner heartbeat", extra={"runner": self._runner})

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
        )
        try:
            done = await self._store.engine.awrite(maintain)
        except Exception:
            self._contact.failed()
            raise
        self._contact.landed(started, time.monotonic())
        extra = {"runner": self._runner}
        if done.lost_lease:
            self._logger.warning("runner lost its lease; registering again", extra=extra)
        if done.dead:
            self._logger.warning(
                "failed %d jobs of dead runners as interrupted",
                done.dead,
                extra={"count": done.dead, **extra},
            )
        if done.lost:
            self._logger.warning(
                "failed %d jobs this runner claimed but never received, as interrupted",
                done.lost,
                extra={"count": done.lost, **extra},
            )
