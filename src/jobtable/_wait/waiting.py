"""Kind's waits for a job's typed result: wait, await_result, enqueue_and_wait and stream.

``stream`` reads a job's progress as it happens (``progress``), woken by
the process's registry of waits (``jobtable._wait.waiters``).
"""

import asyncio
import contextlib
import datetime
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from typing_extensions import Unpack

from jobtable._codec import Codec
from jobtable._engines.base import Queries
from jobtable._engines.rows import JobRow, ProgressRow
from jobtable._enqueue import Binding, Stored
from jobtable._errors import JobCancelled, JobFailed, JobNotFound, WaitTimeout
from jobtable._job import Job, Status
from jobtable._operations import GetJob
from jobtable._options import EnqueueOptions
from jobtable._store import Store
from jobtable._unique import ids_of
from jobtable._values import checked_id, unstorable
from jobtable._wait.waiters import ENDED, waiters_of

P = TypeVar("P")
R = TypeVar("R")

Timeout = float | datetime.timedelta | None
"""How long a wait may take: seconds, a timedelta, or None for no limit."""


def seconds(where: str, timeout: Timeout) -> float | None:
    """timeout in seconds (None: no limit); TypeError or ValueError naming where for a bad one."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        limit = timeout.total_seconds()
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool):
        limit = float(timeout)
    else:
        raise TypeError(f"{where}: timeout must be seconds, a timedelta or None, got {timeout!r}")
    if math.isnan(limit) or limit < 0:
        raise ValueError(f"{where}: timeout must be 0 or more, got {timeout!r}")
    return limit


class Waiting(Generic[P, R]):
    """The waits of ``Kind``: each returns the typed result of a job once it succeeded.

    A wait costs no connection of its own: the process's waits for a store
    share one listener (PostgreSQL: one connection that LISTENs for the
    notification each commit that ends jobs sends; SQLite: the file watch
    runners use), which wakes them as the end commits. Every waited-for job
    is also checked once a second whatever else happens, so a wait returns
    within a second of its job's end, whatever ended it.
    """

    if TYPE_CHECKING:  # what Kind, the one subclass, defines

        @property
        def name(self) -> str: ...

        _codec: Codec[P, R]
        _where: Callable[[str, tuple[Any, ...]], tuple[Binding, Any]]
        _enqueue_many: Callable[[str, Binding, Iterable[P], EnqueueOptions], Stored]
        _aenqueue_many: Callable[[str, Binding, Iterable[P], EnqueueOptions], Awaitable[Stored]]

    @overload
    def wait(self, store: Store, job_id: str, /, *, timeout: Timeout = None) -> R: ...
    @overload
    def wait(self, job_id: str, /, *, timeout: Timeout = None) -> R: ...
    def wait(self, *args: Any, timeout: Timeout = None) -> R:
        """Waits until the job ends and returns its result as R, once it succeeded.

        A job that already ended returns at once. Interrupted (Ctrl-C), the wait
        unregisters itself. A wait that ends without a result leaves the job as it
        is.

        Args:
            *args: The store and the job's id (a bound kind takes the id alone).
            timeout: Seconds or a timedelta to wait at most; None waits as long as
                it takes.

        Returns:
            The job's result, an R.

        Raises:
            JobFailed: The job failed; it carries the job's stored error (a
                ``Failure`` message, never an exception's text).
            JobCancelled: The job was cancelled.
            WaitTimeout: The job has not ended within timeout (a TimeoutError,
                naming the job).
            JobNotFound: No job has the id, or it is of another kind; nothing waits.
            TypeError: A bad timeout.
            ValueError: A bad timeout.
        """
        binding, job_id = self._where("wait", args)
        return self._wait(binding.store, job_id, seconds(f"wait {self.name!r}", timeout))

    # The timeout is wait's, so that its error names the job (asyncio.timeout's cannot).
    @overload
    async def await_result(
        self,
        store: Store,
        job_id: str,
        /,
        *,
        timeout: Timeout = None,  # noqa: ASYNC109
    ) -> R: ...
    @overload
    async def await_result(self, job_id: str, /, *, timeout: Timeout = None) -> R: ...  # noqa: ASYNC109
    async def await_result(self, *args: Any, timeout: Timeout = None) -> R:  # noqa: ASYNC109
        """The async form of wait; cancelling the awaiting task unregisters its wait."""
        binding, job_id = self._where("await_result", args)
        where = f"await_result {self.name!r}"
        return await self._await(binding.store, job_id, seconds(where, timeout))

    @overload
    def enqueue_and_wait(
        self,
        store: Store,
        payload: P,
        /,
        *,
        wait_timeout: Timeout = None,
        **options: Unpack[EnqueueOptions],
    ) -> R: ...
    @overload
    def enqueue_and_wait(
        self, payload: P, /, *, wait_timeout: Timeout = None, **options: Unpack[EnqueueOptions]
    ) -> R: ...
    def enqueue_and_wait(
        self, *args: Any, wait_timeout: Timeout = None, **options: Unpack[EnqueueOptions]
    ) -> R:
        """Enqueues a job with payload as enqueue does, then waits for its result as wait does.

        On WaitTimeout the job stays queued or running; the error's job_id names it.

        Args:
            *args: The store and the payload (a bound kind takes the payload alone).
            wait_timeout: wait's timeout (``timeout`` stays the job's option, the
                time one attempt may take).
            **options: The job's options, as enqueue takes them, but conn: the job
                would be stored only when that transaction commits, so no wait could
                see it (enqueue with conn, commit, then wait).

        Returns:
            The job's result, an R.

        Raises:
            ValueError: conn was given; nothing is stored.
            PayloadError: As enqueue raises it.
            JobFailed: As wait raises it.
            JobCancelled: As wait raises it.
            WaitTimeout: As wait raises it.
        """
        binding, payload = self._where("enqueue_and_wait", args)
        _refuse_conn(f"enqueue_and_wait {self.name!r}", options)
        limit = seconds(f"enqueue_and_wait {self.name!r}", wait_timeout)
        job_id = ids_of(*self._enqueue_many("enqueue", binding, [payload], options))[0]
        return self._wait(binding.store, job_id, limit)

    @overload
    async def aenqueue_and_wait(
        self,
        store: Store,
        payload: P,
        /,
        *,
        wait_timeout: Timeout = None,
        **options: Unpack[EnqueueOptions],
    ) -> R: ...
    @overload
    async def aenqueue_and_wait(
        self, payload: P, /, *, wait_timeout: Timeout = None, **options: Unpack[EnqueueOptions]
    ) -> R: ...
    async def aenqueue_and_wait(
        self, *args: Any, wait_timeout: Timeout = None, **options: Unpack[EnqueueOptions]
    ) -> R:
        """The async form of enqueue_and_wait."""
        binding, payload = self._where("enqueue_and_wait", args)
        _refuse_conn(f"aenqueue_and_wait {self.name!r}", options)
        limit = seconds(f"aenqueue_and_wait {self.name!r}", wait_timeout)
        stored = await self._aenqueue_many("enqueue", binding, [payload], options)
        return await self._await(binding.store, ids_of(*stored)[0], limit)

    @overload
    def stream(self, store: Store, job_id: str, /) -> AsyncGenerator[Job[R], None]: ...
    @overload
    def stream(self, job_id: str, /) -> AsyncGenerator[Job[R], None]: ...
    def stream(self, *args: Any) -> AsyncGenerator[Job[R], None]:
        """The job as it changes, for ``async for``: each partial result as it is published.

        Yields the job (``Job[R]``, its result parsed as R) as the stream
        finds it, then again each time its status changes or it publishes a
        partial result, and ends after the update in which it ended:
        succeeded with its result, failed with its stored error (a
        ``Failure`` message, never an exception's text), or cancelled. A
        job stores only its latest partial result: the stream never yields
        one publish twice, and when partial results come faster than it
        reads, it yields the latest and skips those already replaced.
        Updates come as the change commits (the process's one listener for
        the store, as ``wait``'s), and within a second otherwise. A stream
        left early (``break``) ends its watch when collected, or at once in
        ``contextlib.aclosing``.

        Args:
            *args: The store and the job's id (a bound kind takes the id alone).

        Returns:
            An async generator of the job (``Job[R]``) at each change.

        Raises:
            TypeError: The id is not a str (at once, before any iteration).
            JobNotFound: No job has the id, or it is of another kind (from the
                first iteration), or the job was deleted (from a later one).
            ResultError: A stored result no longer validates as R.
        """
        binding, job_id = self._where("stream", args)
        GetJobProgress(job_id)  # a bad id raises now, not at the first iteration
        return self._stream(binding.store, job_id)

    async def _stream(self, store: Store, job_id: str) -> AsyncGenerator[Job[R], None]:
        async with contextlib.aclosing(progress(store, job_id, self.name)) as rows:
            async for row in rows:
                yield self._typed(store, row)

    def _wait(self, store: Store, job_id: str, limit: float | None) -> R:
        row = store.engine.read(GetJob(job_id))
        if row.status not in ENDED:
            self._same_kind(row)
            waiters = waiters_of(store, store.engine)
            future = waiters.add(job_id)
            try:
                row = future.result(limit)
            except TimeoutError:
                raise WaitTimeout(job_id, limit or 0.0) from None
            finally:
                waiters.discard(job_id, future)
        return self._outcome(store, row)

    async def _await(self, store: Store, job_id: str, limit: float | None) -> R:
        row = await store.engine.aread(GetJob(job_id))
        if row.status not in ENDED:
            self._same_kind(row)
            waiters = waiters_of(store, store.engine)
            future = waiters.add(job_id)
            try:
                row = await asyncio.wait_for(asyncio.wrap_future(future), limit)
            except TimeoutError:
                raise WaitTimeout(job_id, limit or 0.0) from None
            finally:
                waiters.discard(job_id, future)
        return self._outcome(store, row)

    def _typed(self, store: Store, row: JobRow) -> Job[R]:
        """row as a Job with its result parsed as R; JobNotFound for a job of another kind."""
        if row.kind != self.name:
            raise JobNotFound(f"job {row.id!r} is a {row.kind!r} job, not {self.name!r}")
        text, keys = row.result, store.secret_keys
        result = None if text is None else self._codec.decode_result(text, row.id, keys)
        return Job[R](
            id=row.id, kind=row.kind, status=Status(row.status), result=result, error=row.error
        )

    def _same_kind(self, row: JobRow) -> None:
        if row.kind != self.name:
            raise JobNotFound(
                f"wait: job {row.id!r} is a {row.kind!r} job, not {self.name!r}: nothing waits"
            )

    def _outcome(self, store: Store, row: JobRow) -> R:
        """The result of row, an ended job: R, or JobFailed or JobCancelled."""
        job = self._typed(store, row)
        if job.status is Status.SUCCEEDED:
            return cast(R, job.result)
        if job.status is Status.FAILED:
            raise JobFailed(job.id, job.error or "")
        raise JobCancelled(job.id)


def _refuse_conn(where: str, options: Mapping[str, object]) -> None:
    """Raises ValueError, naming where, when options hold a conn: its job is not visible yet."""
    if options.get("conn") is not None:
        raise ValueError(
            f"{where}: conn= is refused: the job is stored only when that transaction "
            f"commits, so no wait could see it; enqueue with conn=, commit, then wait"
        )


class GetJobProgress:
    """The read of one job's progress; raises JobNotFound when no job has the id."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        self.job_id = checked_id(job_id)

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
