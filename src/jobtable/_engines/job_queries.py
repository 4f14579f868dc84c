"""The seam's job methods both engines run alike, over their generated jobs Querier.

Each engine's adapter derives from ``CommonJobQueries`` and sets ``_q`` to
its generated Querier of queries/jobs.sql; the methods whose statements
differ between the engines stay with the adapter (PostgreSQL's readying of
retries, say, also moves its claims' places back).
"""

from collections.abc import Sequence
from typing import Protocol

from jobtable._engines.listing import ListingQueries, list_page
from jobtable._engines.rows import (
    BacklogRow,
    CountRow,
    HeldRow,
    JobRow,
    LabelsRow,
    ProgressRow,
    RecordRow,
    stored,
)
from jobtable._engines.runner_queries import PeerRow


class _Id(Protocol):
    @property
    def id(self) -> str: ...


class _Status(Protocol):
    @property
    def status(self) -> str: ...


class JobStatements(ListingQueries[object], Protocol):
    """The statements of queries/jobs.sql that both engines' generated Queriers share."""

    def count_jobs(self) -> Sequence[CountRow]: ...

    def count_ready_jobs(self) -> Sequence[object]: ...

    def delete_runner_process(self, *, name: str, host: str | None, process: str | None) -> int: ...

    def get_job(self, *, id: str) -> JobRow | None: ...

    def get_job_labels(self, *, id: str) -> LabelsRow | None: ...

    def get_job_progress(self, *, id: str) -> ProgressRow | None: ...

    def get_job_record(self, *, id: str) -> object | None: ...

    def get_unique_holder(self, *, kind: str, unique_key: str) -> _Id | None: ...

    def list_cancel_requests(self, *, runner: str) -> Sequence[HeldRow]: ...

    def list_runners_on_host(self, *, host: str | None, name: str) -> Sequence[PeerRow]: ...

    def lock_job(self, *, id: str) -> _Status | None: ...


class CommonJobQueries:
    """The seam's job methods that both engines run alike, over ``_q``."""

    _q: JobStatements

    def count_jobs(self) -> Sequence[CountRow]:
        return self._q.count_jobs()

    def count_ready_jobs(self) -> Sequence[BacklogRow]:
        return [stored(BacklogRow, row) for row in self._q.count_ready_jobs()]

    def delete_runner_process(self, *, name: str, host: str | None, process: str | None) -> int:
        return self._q.delete_runner_process(name=name, host=host, process=process)

    def get_job(self, *, id: str) -> JobRow | None:
        return self._q.get_job(id=id)

    def get_job_labels(self, *, id: str) -> LabelsRow | None:
        return self._q.get_job_labels(id=id)

    def get_job_progress(self, *, id: str) -> ProgressRow | None:
        return self._q.get_job_progress(id=id)

    def get_job_record(self, *, id: str) -> RecordRow | None:
        row = self._q.get_job_record(id=id)
        return None if row is None else stored(RecordRow, row)

    def get_unique_holder(self, *, kind: str, unique_key: str) -> str | None:
        row = self._q.get_unique_holder(kind=kind, unique_key=unique_key)
        return None if row is None else row.id

    def list_cancel_requests(self, *, runner: str) -> Sequence[HeldRow]:
        return self._q.list_cancel_requests(runner=runner)

    def list_jobs(
        self,
        *,
        before: int,
        status: str | None,
        kind: str | None,
        queue: str | None,
        tag: str | None,
        max_jobs: int,
    ) -> Sequence[RecordRow]:
        rows = list_page(
            self._q,
            before=before,
            status=status,
            kind=kind,
            queue=queue,
            tag=tag,
            max_jobs=max_jobs,
        )
        return [stored(RecordRow, row) for row in rows]

    def list_runners_on_host(self, *, host: str | None, name: str) -> Sequence[PeerRow]:
        return self._q.list_runners_on_host(host=host, name=name)

    def lock_job(self, *, id: str) -> str | None:
        row = self._q.lock_job(id=id)
        return None if row is None else row.status
