"""The seam's queries for the dashboard (queries/dashboard.sql): names, search, bulk, figures.

``jobtable._engines.base.Queries`` includes these; each engine's adapter has them.
Times go in as UTC text and come out as aware UTC datetimes.
"""

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Protocol

from jobtable._engines.rows import RecordRow


class KindNameRow(Protocol):
    """A kind some job has."""

    @property
    def kind(self) -> str: ...


class QueueNameRow(Protocol):
    """A queue some job is in."""

    @property
    def queue(self) -> str: ...


@dataclasses.dataclass(frozen=True, slots=True)
class FinishedRow:
    """A finished job's kind, status and times: for the per-kind figures."""

    kind: str
    status: str
    run_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime


@dataclasses.dataclass(frozen=True, slots=True)
class DueRow:
    """How many queued jobs of a queue are due, and the earliest run_at among them."""

    queue: str
    jobs: int
    oldest_run_at: datetime.datetime


class RunningQueueRow(Protocol):
    """A running job's id, runner and queue."""

    @property
    def id(self) -> str: ...
    @property
    def runner(self) -> str | None: ...
    @property
    def queue(self) -> str: ...


class NeededRow(Protocol):
    """A job of a workflow that another job still needs: a bulk delete deletes it by id."""

    @property
    def id(self) -> str: ...


class DashboardQueries(Protocol):
    """The queries of queries/dashboard.sql, named as there."""

    def list_kind_names(self) -> Sequence[KindNameRow]: ...

    def list_queue_names(self) -> Sequence[QueueNameRow]: ...

    def search_payloads(self, *, scan: int, text: str, max_jobs: int) -> Sequence[RecordRow]:
        """Up to max_jobs of the scan newest jobs whose payload holds text, any case."""
        ...

    def cancel_queued_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int: ...

    def cancel_pending_matching(
        self, *, now: str, kind: str | None, queue: str | None, max_jobs: int
    ) -> int: ...

    def request_cancel_matching(self, *, now: str, kind: str | None, queue: str | None) -> int: ...

    def delete_matching(
        self, *, status: str | None, kind: str | None, queue: str | None, max_jobs: int
    ) -> int: ...

    def list_needed_matching(
        self, *, status: str | None, kind: str | None, queue: str | None, max_jobs: int
    ) -> Sequence[NeededRow]: ...

    def finished_since(self, *, since: str, max_jobs: int) -> Sequence[FinishedRow]: ...

    def oldest_due_by_queue(self, *, now: str) -> Sequence[DueRow]: ...

    def list_running_queues(self) -> Sequence[RunningQueueRow]: ...
