"""The listing's choice of query: one ListJobs* query per set of filters given.

A single query with ``(filter IS NULL OR column = filter)`` conditions can
use no index, so each set of filters has a query of its own that reads one
index in seq order (queries/jobs.sql says which), and this module picks it.
A listing by tag reads job_tags (ListJobsByTag, or ListJobsByTagFiltered
with other filters), whatever its other filters. A listing of queued jobs
is ListJobsQueued, and of running jobs ListJobsRunning, whatever the other
filters: they read the claim's indexes (jobs_queued and jobs_scheduled,
jobs_running).
A status a job seldom reaches (RARE_STATUSES) has indexes of its own that a
claim and a finish never write, read by the ListJobsByRareStatus* queries.
Any other listing (no status, or succeeded) is ListJobsInOrder,
ListJobsByKind, ListJobsByQueue or ListJobsByKindQueue, by the kind and
queue given, with the status as a filter. Both engines' generated Queriers
have the same methods, so the choice is made once, here.
"""

from collections.abc import Sequence
from typing import Protocol, TypeVar

Row = TypeVar("Row", covariant=True)

RARE_STATUSES = frozenset({"failed", "cancelled", "pending"})
"""The statuses listed from indexes of their own (jobs_by_rare_status and its kin)."""


class ListingQueries(Protocol[Row]):
    """The ListJobs* queries of a generated Querier, each returning rows of Row."""

    def list_jobs_in_order(
        self, *, before: int, status: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_kind(
        self, *, kind: str, before: int, status: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_queue(
        self, *, queue: str, before: int, status: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_kind_queue(
        self, *, kind: str, queue: str, before: int, status: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_rare_status(
        self, *, status: str, before: int, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_rare_status_kind(
        self, *, status: str, kind: str, before: int, queue: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_rare_status_queue(
        self, *, status: str, queue: str, before: int, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_queued(
        self, *, before: int, kind: str | None, queue: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_running(
        self, *, before: int, kind: str | None, queue: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_tag(self, *, tag: str, before: int, max_jobs: int) -> Sequence[Row]: ...

    def list_jobs_by_tag_filtered(
        self,
        *,
        tag: str,
        before: int,
        status: str | None,
        kind: str | None,
        queue: str | None,
        max_jobs: int,
    ) -> Sequence[Row]: ...


def list_page(
    q: ListingQueries[Row],
    *,
    before: int,
    status: str | None,
    kind: str | None,
    queue: str | None,
    tag: str | None = None,
    max_jobs: int,
) -> Sequence[Row]:
    """Up to max_jobs rows with seq below before, newest first, matching every filter given."""
    if tag is not None:
        if status is None and kind is None and queue is None:
            return q.list_jobs_by_tag(tag=tag, before=before, max_jobs=max_jobs)
        return q.list_jobs_by_tag_filtered(
            tag=tag, before=before, status=status, kind=kind, queue=queue, max_jobs=max_jobs
        )
    if status == "queued":
        return q.list_jobs_queued(before=before, kind=kind, queue=queue, max_jobs=max_jobs)
    if status == "running":
        return q.list_jobs_running(before=before, kind=kind, queue=queue, max_jobs=max_jobs)
    if status in RARE_STATUSES:
        return _rare_page(
            q, before=before, status=status, kind=kind, queue=queue, max_jobs=max_jobs
        )
    if kind is None:
        if queue is None:
            return q.list_jobs_in_order(before=before, status=status, max_jobs=max_jobs)
        return q.list_jobs_by_queue(queue=queue, before=before, status=status, max_jobs=max_jobs)
    if queue is None:
        return q.list_jobs_by_kind(kind=kind, before=before, status=status, max_jobs=max_jobs)
    return q.list_jobs_by_kind_queue(
        kind=kind, queue=queue, before=before, status=status, max_jobs=max_jobs
    )


def _rare_page(
    q: ListingQueries[Row],
    *,
    before: int,
    status: str,
    kind: str | None,
    queue: str | None,
    max_jobs: int,
) -> Sequence[Row]:
    if kind is not None:
        return q.list_jobs_by_rare_status_kind(
            status=status, kind=kind, before=before, queue=queue, max_jobs=max_jobs
        )
    if queue is not None:
        return q.list_jobs_by_rare_status_queue(
            status=status, queue=queue, before=before, max_jobs=max_jobs
        )
    return q.list_jobs_by_rare_status(status=status, before=before, max_jobs=max_jobs)
