"""A job's progress as it happens: the reads and wake-ups behind ``Kind.stream``.

A job stores only its latest partial result, with the count of those it has
published (``published``), so a stream reads the job whenever it may have
changed and yields it when its status or that count moved: never one publish
twice, and, when a handler publishes faster than the stream reads, the
latest one (those in between were replaced in the table before anyone read
them). Wake-ups come from the process's one listener for the store
(``Waiters.watch``): PostgreSQL's notification of each publish and end,
SQLite's watch of the file; the stream also reads the job every ``poll``
seconds, the safety net for a wake-up that never comes.
"""

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from jobtable._engines.base import Queries
from jobtable._engines.rows import ProgressRow
from jobtable._errors import JobNotFound
from jobtable._store import Store
from jobtable._values import unstorable
from jobtable._wait.waiters import ENDED, waiters_of


class GetJobProgress:
    """The read of one job's progress; raises JobNotFound when no job has the id."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        if not isinstance(job_id, str):
            raise TypeError(f"job id is {type(job_id).__name__}, want str")
        self.job_id = job_id

    def __call__(self, q: Queries) -> ProgressRow:
        row = None if unstorable(self.job_id) else q.get_job_progress(id=self.job_id)
        if row is None:
            raise JobNotFound(f"job {self.job_id!r} not found")
        return row


async def progress(
    store: Store, job_id: str, kind: str, poll: float | None = None
) -> AsyncGenerator[ProgressRow, None]:
    """Yields the job's row each time its status or count of partial results changed.

    The first row is the job as found; the last, one that ended. Raises
    JobNotFound for an unknown id or a job of another kind than kind (then
    nothing was yielded), or when the job is deleted meanwhile. poll: the
    seconds between two reads without a wake-up (None: the waiters').
    """
    read = GetJobProgress(job_id)
    waiters = waiters_of(store, store.engine)
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()

    def wake() -> None:
        loop.call_soon_threadsafe(woken.set)

    # Watched before the first read, so that no change after that read goes unseen.
    waiters.watch(job_id, wake)
    try:
        seen: tuple[str, int] | None = None
        while True:
            woken.clear()
            row = await store.engine.aread(read)
            if seen is None and row.kind != kind:
                raise JobNotFound(f"stream: job {job_id!r} is a {row.kind!r} job, not {kind!r}")
            if (row.status, row.published) != seen:
                seen = (row.status, row.published)
                yield row
            if row.status in ENDED:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), waiters.poll if poll is None else poll)
    finally:
        waiters.unwatch(job_id, wake)
