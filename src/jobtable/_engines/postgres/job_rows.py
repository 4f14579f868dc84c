"""The jobs enqueues store on PostgreSQL, gathered so that one statement stores them all.

The engine's adapter (``queries``) stores an ``enqueue_many``'s
jobs through it, and group commit (``batch``) the jobs of
concurrent enqueues.
"""

import datetime
from collections.abc import Sequence
from typing import TypedDict, cast

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.rows import JobFields, NewJob, seam_time
from jobtable.db.postgres import jobs
from jobtable.db.postgres.models import JSONValue

_Connection = psycopg.Connection[TupleRow]


def zoned(text: str) -> str:
    """Returns the seam's time text as it goes in JSON; raises ValueError for one without a zone."""
    if not text.endswith("Z"):
        seam_time(text)
    return text


class TimedFields(TypedDict):
    """JobFields with its times as the datetimes psycopg binds to timestamptz."""

    id: str
    kind: str
    queue: str
    priority: int
    payload: str
    max_attempts: int
    timeout: float | None
    run_at: datetime.datetime
    now: datetime.datetime
    traceparent: str | None
    partition_key: str | None
    sequence_key: str | None
    sequence_blocks: bool
    tags: str
    meta: str | None


def timed(fields: JobFields) -> TimedFields:
    """fields with run_at and now as datetimes: the parameters of CreateJob and CreateUniqueJob."""
    return TimedFields(
        id=fields["id"],
        kind=fields["kind"],
        queue=fields["queue"],
        priority=fields["priority"],
        payload=fields["payload"],
        max_attempts=fields["max_attempts"],
        timeout=fields["timeout"],
        run_at=seam_time(fields["run_at"]),
        now=seam_time(fields["now"]),
        traceparent=fields["traceparent"],
        partition_key=fields["partition_key"],
        sequence_key=fields["sequence_key"],
        sequence_blocks=fields["sequence_blocks"],
        tags=fields["tags"],
        meta=fields["meta"],
    )


class JobRows:
    """Jobs to store, gathered from enqueues: CreateJob stores one, CreateJobs several at once.

    ``insert_jobs`` adds jobs as the seam's method of that name takes them;
    the jobs of several calls, of several kinds and moments, go in one
    statement (group commit gathers concurrent enqueues this way: see
    ``jobtable._engines.postgres.batch``). ``store`` sends that statement, which on
    an autocommit connection is its own transaction.
    """

    __slots__ = ("_rows",)

    def __init__(self) -> None:
        self._rows: list[tuple[str, NewJob, str]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def insert_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        """Adds jobs of kind enqueued at now; raises ValueError for a time without a zone.

        The times are checked here, so that an enqueue with a bad one fails
        before anything is sent and the jobs gathered with it are not lost.
        """
        moment = zoned(now)
        for job in jobs:
            zoned(job.run_at)
        self._rows.extend((kind, job, moment) for job in jobs)

    def truncate(self, size: int) -> None:
        """Forgets the jobs added after the first size."""
        del self._rows[size:]

    def part(self, start: int, end: int) -> "JobRows":
        """The jobs added from the start-th up to the end-th, apart."""
        part = JobRows()
        part._rows = self._rows[start:end]
        return part

    def store(self, conn: _Connection) -> None:
        """Inserts the jobs, in the order added, with one statement on conn; none, nothing.

        Raises psycopg's error when the server refuses a row (then it stores
        none) or the connection is lost.
        """
        rows = self._rows
        q = jobs.Querier(conn)
        if len(rows) == 1:
            [(kind, job, moment)] = rows
            q.create_job(**timed(job.fields(kind, moment)))
        elif rows:
            # The JSON array of CreateJobs carries the times as text, zoned (see
            # zoned); every field of JobFields is a str, an int, a float or None.
            fields = [job.fields(kind, moment) for kind, job, moment in rows]
            q.create_jobs(jobs=cast("JSONValue", fields))
