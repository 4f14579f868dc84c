"""The listing's choice of query: one ListJobs* query per set of filters given.

A single query with ``(filter IS NULL OR column = filter)`` conditions can
use no index, so each set of filters has a query of its own that reads one
index in seq order (queries/jobs.sql says which), and this module picks it.
A listing by tag reads job_tags (ListJobsByTag, or ListJobsByTagFiltered
with other filters), whatever its other filters. Otherwise, the listing's
indexes leave running rows out: a listing of running jobs is
ListJobsRunning, whatever its other filters, which reads jobs_running.
Both engines' generated Queriers have the same methods, so the choice is made
once, here.
"""

from collections.abc import Sequence
from typing import Protocol, TypeVar

Row = TypeVar("Row", covariant=True)


class ListingQueries(Protocol[Row]):
    """The ListJobs* queries of a generated Querier, each returning rows of Row."""

    def list_jobs_unfiltered(self, *, before: int, max_jobs: int) -> Sequence[Row]: ...

    def list_jobs_by_status(self, *, before: int, status: str, max_jobs: int) -> Sequence[Row]: ...

    def list_jobs_running(
        self, *, before: int, kind: str | None, queue: str | None, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_kind(self, *, kind: str, before: int, max_jobs: int) -> Sequence[Row]: ...

    def list_jobs_by_queue(self, *, queue: str, before: int, max_jobs: int) -> Sequence[Row]: ...

    def list_jobs_by_status_kind(
        self, *, before: int, status: str, kind: str, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_status_queue(
        self, *, before: int, status: str, queue: str, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_kind_queue(
        self, *, kind: str, queue: str, before: int, max_jobs: int
    ) -> Sequence[Row]: ...

    def list_jobs_by_status_kind_queue(
        self, *, before: int, status: str, kind: str, queue: str, max_jobs: int
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
    if status is None:
        if kind is None:
            if queue is None:
                return q.list_jobs_unfiltered(before=before, max_jobs=max_jobs)
            return q.list_jobs_by_queue(queue=queue, before=before, max_jobs=max_jobs)
        if queue is None:
            return q.list_jobs_by_kind(kind=kind, before=before, max_jobs=max_jobs)
        return q.list_jobs_by_kind_queue(kind=kind, queue=queue, before=before, max_jobs=max_jobs)
    if status == "running":
        return q.list_jobs_running(before=before, kind=kind, queue=queue, max_jobs=max_jobs)
    if kind is None:
        if queue is None:
            return q.list_jobs_by_status(before=before, status=status, max_jobs=max_jobs)
        return q.list_jobs_by_status_queue(
            before=before, status=status, queue=queue, max_jobs=max_jobs
        )
    if queue is None:
        return q.list_jobs_by_status_kind(
            before=before, status=status, kind=kind, max_jobs=max_jobs
        )
    return q.list_jobs_by_status_kind_queue(
        before=before, status=status, kind=kind, queue=queue, max_jobs=max_jobs
    )
