"""The seam's queries for durable waiting (queries/waits.sql): signals and the jobs waiting.

``jobtable._engines.base.Queries`` includes these; each engine's adapter has
them. Times go in as UTC text and come out as aware UTC datetimes.
"""

import dataclasses
import datetime
from typing import Protocol

from jobtable._engines.rows import stored


class SignalRow(Protocol):
    """A stored signal: its id (ids grow and never repeat) and its payload's JSON text."""

    @property
    def id(self) -> int: ...
    @property
    def payload(self) -> str: ...


@dataclasses.dataclass(frozen=True, slots=True)
class JobWaitRow:
    """What a waiting job waits for: a signal of name and key newer than after_id."""

    position: int
    name: str
    key: str
    after_id: int
    deadline: datetime.datetime | None
    since: datetime.datetime


class WaitQueries(Protocol):
    """The queries of queries/waits.sql, named as there, and the two writes made of them."""

    def send_signal(self, *, name: str, key: str, payload: str, now: str) -> int:
        """Stores a signal and makes every job waiting for its name and key ready now.

        Returns how many jobs it woke. Serialized with suspend_waiting_job for
        the same name and key (InsertSignal and WakeWaitingJobs after
        LockSignalKey where the engine needs it), so no wait misses it.
        """
        ...

    def suspend_waiting_job(
        self,
        *,
        id: str,
        attempt: int,
        position: int,
        name: str,
        key: str,
        after_id: int,
        deadline: str | None,
        run_at: str,
        now: str,
    ) -> int:
        """Records the job's wait, puts it back in its queue from run_at (SaveJobWait, SuspendJob).

        Returns 1, or 0 when the job is not running under the claim of
        attempt (then the caller rolls the wait back). The job is ready at
        once when a signal of name and key newer than after_id is stored.
        """
        ...

    def find_signal(self, *, name: str, key: str, after_id: int) -> SignalRow | None:
        """The oldest signal of name and key newer than after_id, or None."""
        ...

    def get_job_wait(self, *, job_id: str) -> JobWaitRow | None:
        """What the job job_id waits for, or None when it waits for nothing."""
        ...

    def end_job_wait(self, *, job_id: str) -> int:
        """Forgets what the job job_id waited for; returns the rows deleted."""
        ...

    def ready_scheduled_jobs(self, *, queue: str) -> int:
        """Makes the scheduled jobs of queue ready now, but those that sleep or wait (for tests)."""
        ...

    def prune_signals(self, *, before: str) -> int:
        """Deletes the signals sent before before; returns how many."""
        ...


class WaitStatements(Protocol):
    """The statements of queries/waits.sql that both engines' generated Queriers share."""

    def find_signal(self, *, name: str, key: str, after_id: int) -> SignalRow | None: ...

    def end_job_wait(self, *, job_id: str) -> int: ...

    def ready_scheduled_jobs(self, *, queue: str) -> int: ...

    def get_job_wait(self, *, job_id: str) -> object | None: ...


class CommonWaitQueries:
    """The seam's waiting methods that both engines run alike, over ``_waits``.

    Each engine's adapter derives from it and sets ``_waits`` to its
    generated waits Querier; a signal's send and a job's suspension differ
    by necessity (PostgreSQL locks the signal's key, SQLite's single writer
    needs no lock) and stay with it.
    """

    _waits: WaitStatements

    def find_signal(self, *, name: str, key: str, after_id: int) -> SignalRow | None:
        return self._waits.find_signal(name=name, key=key, after_id=after_id)

    def end_job_wait(self, *, job_id: str) -> int:
        return self._waits.end_job_wait(job_id=job_id)

    def ready_scheduled_jobs(self, *, queue: str) -> int:
        return self._waits.ready_scheduled_jobs(queue=queue)

    def get_job_wait(self, *, job_id: str) -> JobWaitRow | None:
        row = self._waits.get_job_wait(job_id=job_id)
        return None if row is None else stored(JobWaitRow, row)
