"""The seam's queries for operators (queries/admin.sql): retry, delete, runners, stats, secrets.

``jobtable._engines.base.Queries`` includes these; each engine's adapter has them.
Times go in as UTC text and come out as aware UTC datetimes.
"""

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Protocol


@dataclasses.dataclass(frozen=True, slots=True)
class RunnerRow:
    """A runner's registration: its name, when it started and last beat, and whether it is alive.

    alive tells whether its heartbeat is within the lease asked about.
    """

    name: str
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime
    alive: bool


@dataclasses.dataclass(frozen=True, slots=True)
class ListedRunnerRow(RunnerRow):
    """A runner's registration as the listing reads it, with the secret key ids it lacked.

    missing_keys is a sorted JSON array of key ids, or None while it lacked none.
    """

    missing_keys: str | None


class HeldJobRow(Protocol):
    """A running job's id, the runner holding it, and its queue."""

    @property
    def runner(self) -> str | None: ...
    @property
    def id(self) -> str: ...
    @property
    def queue(self) -> str: ...


@dataclasses.dataclass(frozen=True, slots=True)
class StatsRow:
    """How many jobs of one queue have one status, how many are due, and the earliest due run_at.

    due and oldest_run_at speak of queued jobs only: due is 0 and
    oldest_run_at is the time asked about for any other status, or when no
    queued job is due.
    """

    queue: str
    status: str
    jobs: int
    due: int
    oldest_run_at: datetime.datetime


@dataclasses.dataclass(frozen=True, slots=True)
class MinuteRow:
    """How many jobs finished with one status in the minute that starts at minute."""

    minute: datetime.datetime
    status: str
    jobs: int


class SealedRow(Protocol):
    """A job whose payload or result holds an encrypted secret: its stored texts."""

    @property
    def seq(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def payload(self) -> str: ...
    @property
    def result(self) -> str | None: ...


class OperatorQueries(Protocol):
    """The queries of queries/admin.sql, named as there."""

    def requeue_job(self, *, now: str, id: str) -> int:
        """Puts a failed or cancelled job back in its queue with fresh attempts; 0: neither."""
        ...

    def requeue_failed_jobs(self, *, now: str, kind: str | None, queue: str | None) -> int:
        """Does what requeue_job does to every failed job of no workflow matching the filters.

        Returns how many it requeued.
        """
        ...

    def failed_workflow_jobs(self, *, kind: str | None, queue: str | None) -> list[str]:
        """The ids of the failed jobs of workflows matching the filters, in enqueue order."""
        ...

    def wake_runners(self) -> None:
        """Wakes idle runners of other processes when the transaction commits."""
        ...

    def delete_job(self, *, id: str) -> int:
        """Deletes the job unless it is running; 0: running or unknown."""
        ...

    def list_runners(self, *, now: str, lease: float) -> Sequence[ListedRunnerRow]:
        """Every registered runner; alive tells whether it beat within lease seconds."""
        ...

    def list_held_jobs(self) -> Sequence[HeldJobRow]: ...

    def job_stats(self, *, now: str) -> Sequence[StatsRow]: ...

    def finished_per_minute(self, *, since: str) -> Sequence[MinuteRow]: ...

    def list_sealed_jobs(self, *, after_seq: int, max_jobs: int) -> Sequence[SealedRow]:
        """Up to max_jobs jobs after after_seq, in seq order, that hold an encrypted secret."""
        ...

    def reseal_job(
        self,
        *,
        new_payload: str,
        new_result: str | None,
        id: str,
        old_payload: str,
        old_result: str | None,
    ) -> int:
        """Stores new texts for a job whose texts are still the old ones; 0: they changed."""
        ...


class _Id(Protocol):
    @property
    def id(self) -> str: ...


class AdminStatements(Protocol):
    """The statements of queries/admin.sql that both engines' generated Queriers share."""

    def list_failed_workflow_jobs(
        self, *, kind: str | None, queue: str | None
    ) -> Sequence[_Id]: ...

    def delete_job(self, *, id: str) -> int: ...

    def list_held_jobs(self) -> Sequence[HeldJobRow]: ...

    def list_sealed_jobs(self, *, after_seq: int, max_jobs: int) -> Sequence[SealedRow]: ...

    def reseal_job(
        self,
        *,
        new_payload: str,
        new_result: str | None,
        id: str,
        old_payload: str,
        old_result: str | None,
    ) -> int: ...


class CommonOperatorQueries:
    """The seam's operator methods that both engines run alike, over ``_admin``.

    Each engine's adapter derives from it and sets ``_admin`` to its
    generated admin Querier; the methods whose statements differ stay with it.
    """

    _admin: AdminStatements

    def failed_workflow_jobs(self, *, kind: str | None, queue: str | None) -> list[str]:
        return [row.id for row in self._admin.list_failed_workflow_jobs(kind=kind, queue=queue)]

    def delete_job(self, *, id: str) -> int:
        return self._admin.delete_job(id=id)

    def list_held_jobs(self) -> Sequence[HeldJobRow]:
        return self._admin.list_held_jobs()

    def list_sealed_jobs(self, *, after_seq: int, max_jobs: int) -> Sequence[SealedRow]:
        return self._admin.list_sealed_jobs(after_seq=after_seq, max_jobs=max_jobs)

    def reseal_job(
        self,
        *,
        new_payload: str,
        new_result: str | None,
        id: str,
        old_payload: str,
        old_result: str | None,
    ) -> int:
        return self._admin.reseal_job(
            new_payload=new_payload,
            new_result=new_result,
            id=id,
            old_payload=old_payload,
            old_result=old_result,
        )
