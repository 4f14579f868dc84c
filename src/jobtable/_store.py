"""The store: the database jobs live in, which enqueuers and runners share."""

import asyncio
import datetime
import functools
import os
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self, TypedDict

from typing_extensions import Unpack

from jobtable._engines.base import Engine
from jobtable._engines.rows import CountRow
from jobtable._engines.sqlite.wal_limit import WAL_LIMIT
from jobtable._engines.target import URL_SCHEME, open_engine
from jobtable._job import (
    CancelResult,
    Job,
    JobRecord,
    Status,
    inspected_record,
    job_from_row,
    record_from_row,
)
from jobtable._labels import EnqueueHook, check_hook, check_tag
from jobtable._operations import CancelJob, CancelWorkflow, GetJob, InspectJob, ListJobs, count_jobs
from jobtable._operator.admin import AdminMethods
from jobtable._operator.dashboard import DashboardMethods
from jobtable._operator.queues import QueueMethods
from jobtable._operator.workflows import WorkflowMethods
from jobtable._secrets import SecretKeys, keys_of
from jobtable._signal import SignalMethods
from jobtable._values import redact_url, timestamp

_utc_now = functools.partial(datetime.datetime.now, datetime.UTC)
"""The default clock: the current time in UTC (a partial, cheaper to call than a function)."""


_MAX_SEQ = (1 << 63) - 1


def _list(
    status: Status | str | None,
    kind: str | None,
    queue: str | None,
    before: int | None,
    limit: int,
    tag: str | None = None,
) -> ListJobs:
    if status is not None:
        try:
            status = Status(status)
        except ValueError:
            choices = ", ".join(s.value for s in Status)
            raise ValueError(
                f"list_jobs: status must be one of {choices}, got {status!r}"
            ) from None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValueError(f"list_jobs: limit must be an int from 1 to 1000, got {limit!r}")
    if before is not None and (isinstance(before, bool) or not isinstance(before, int)):
        raise ValueError(f"list_jobs: before must be the int seq of a record, got {before!r}")
    # A seq is a positive 64-bit int: before past either end means all jobs, or none.
    return ListJobs(
        _MAX_SEQ if before is None else min(max(before, 0), _MAX_SEQ),
        None if status is None else str(status),
        kind,
        queue,
        limit,
        None if tag is None else check_tag("list_jobs", tag),
    )


def _counts(rows: Sequence[CountRow]) -> dict[str, dict[Status, int]]:
    counts: dict[str, dict[Status, int]] = {}
    for row in rows:
        counts.setdefault(row.queue, {})[Status(row.status)] = row.jobs
    return counts


class OpenOptions(TypedDict, total=False):
    """The keyword options of ``Store.open`` (and ``Store.aopen``); see ``Store.open``."""

    durable: bool
    busy_timeout: float
    readers: int
    max_payload_bytes: int
    clock: Callable[[], datetime.datetime] | None
    migrate: bool
    secret_keys: str | Sequence[str] | None
    wal_limit: int | None
    pooled: bool
    listen_url: str | None
    max_connections: int | None


class Store(AdminMethods, QueueMethods, DashboardMethods, WorkflowMethods, SignalMethods):
    """The database jobs live in: a SQLite file or a PostgreSQL server.

    A store opened once is shared by every runner and enqueuer of the process
    and is safe to use from any thread. A web process that only enqueues and
    reads jobs needs a store and its kinds' declarations, no runner. Close it
    when done, or use it as a context manager; a closed store raises
    StoreError. The operations for operators (retry, delete, prune, runners,
    stats, throughput, the schema's state and migrate) come from
    ``AdminMethods``; the dashboard's (kinds, queues, search_payloads,
    cancel_many, delete_many, cancel_matching, delete_matching,
    kind_figures, health) from ``DashboardMethods``; the read of a
    workflow's graph (workflow) and the listing of workflows (workflows) from
    ``WorkflowMethods``.
    """

    engine: Engine
    """The database engine every read and write of the store goes through.

    Its type is the ``Engine`` protocol of ``jobtable._engines.base`` (write, read,
    their async forms, listen, close), which takes operations of that
    module's ``Queries``: a stable seam for tests and tools, not part of the
    application API.
    """

    max_payload_bytes: int
    """The largest encoded payload an enqueue through the store accepts."""

    clock: Callable[[], datetime.datetime]
    """Where the store and its runners take the time: run_at, created_at, claims.

    On PostgreSQL, runners' leases use the server's clock instead, so a
    skewed machine cannot make a live runner look dead.
    """

    secret_keys: SecretKeys | None
    """The keys that encrypt the secrets of payloads and results, or None when none are set.

    repr shows their ids only. See ``Store.open``'s secret_keys.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        target: str,
        max_payload_bytes: int = 1 << 20,
        clock: Callable[[], datetime.datetime] | None = None,
        secret_keys: SecretKeys | None = None,
    ) -> None:
        """Wraps an open engine; repr shows target, without any password.

        Use ``Store.open`` instead.

        Args:
            engine: The open engine of the database.
            target: Where the store lives, as ``Store.location`` shows it.
            max_payload_bytes: The largest encoded payload an enqueue accepts.
            clock: Returns the current time as an aware datetime; None is UTC now.
            secret_keys: The keys of secrets in payloads and results, or None.

        Raises:
            ValueError: max_payload_bytes is not positive.
            TypeError: clock is not callable.
        """
        if max_payload_bytes < 1:
            raise ValueError(
                f"jobtable: max_payload_bytes must be positive, got {max_payload_bytes!r}"
            )
        if clock is not None and not callable(clock):
            raise TypeError(f"jobtable: clock must be callable, got {clock!r}")
        self.engine = engine
        self.max_payload_bytes = max_payload_bytes
        self.clock = clock if clock is not None else _utc_now
        self.secret_keys = secret_keys
        # Only the redacted form is kept, so no password lingers in the object.
        self._target = redact_url(target) if URL_SCHEME.match(target) else target
        self._lock = threading.Lock()
        # Replaced whole under _lock, never changed in place: _enqueued reads it without the lock.
        self._wakes: tuple[Callable[[], None], ...] = ()
        self._enqueue_hooks: list[EnqueueHook] = []

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str],
        *,
        durable: bool = True,
        busy_timeout: float = 5.0,
        readers: int = 4,
        max_payload_bytes: int = 1 << 20,
        clock: Callable[[], datetime.datetime] | None = None,
        migrate: bool = True,
        secret_keys: str | Sequence[str] | None = None,
        wal_limit: int | None = WAL_LIMIT,
        pooled: bool = False,
        listen_url: str | None = None,
        max_connections: int | None = None,
    ) -> Self:
        """Opens the store at target, creating the database or its schema when missing.

        With migrate (the default), a missing schema is created and an older one
        upgraded. Without it, for deploys that upgrade explicitly
        (``Store.migrate``, ``jobtable migrate``), a database whose schema is
        missing or older is refused and left as it is; a missing SQLite file is
        not created.

        A pooled store (a PgBouncer URL, transaction or session mode) prepares no
        statement on the server and leaves no setting on a session, so the pooler
        may share the server connections. Waking runners and waits needs a
        session: without listen_url a pooled store listens to nothing: its
        runners and waits find work by polling, and the first of them to start
        logs one warning saying so (see the PostgreSQL guide's section on
        poolers).

        Args:
            target: A SQLite file (a path, ``sqlite:///relative/path`` or
                ``sqlite:////absolute/path``), or a PostgreSQL server
                (``postgresql://…`` or ``postgres://…``, which needs the
                ``jobtable[postgres]`` extra).
            durable: A write that returned survives a power loss. Without it a
                power loss may lose the last writes but never corrupts the database.
            busy_timeout: SQLite: seconds a write waits for another process's lock.
            readers: SQLite: how many reads may run at once.
            max_payload_bytes: The largest encoded payload an enqueue through the
                store accepts (1 MiB by default).
            clock: Returns the current time as an aware datetime (tests skew it).
            migrate: Create a missing schema and upgrade an older one.
            secret_keys: The keys that encrypt the secrets (``SecretStr``,
                ``SecretBytes``) of payloads and results: ``"k2:BASE64,k1:BASE64"``
                (or a list of such items), each a key id and a 32-byte AES key in
                base64; the first encrypts new secrets, every one decrypts those
                stored under its id. None reads them from the
                ``JOBTABLE_SECRET_KEYS`` environment variable; ``""`` sets none.
                Keys need the ``jobtable[secrets]`` extra.
            wal_limit: SQLite: the ``-wal`` file's size in bytes past which the
                writer checkpoints and empties it, even under constant readers
                (None: SQLite's own checkpoints alone).
            pooled: PostgreSQL: target is a connection pooler's URL.
            listen_url: PostgreSQL: a direct URL to the same database, used only
                to listen, for a pooled store.
            max_connections: PostgreSQL (None: 10): bounds the connections the
                store keeps to the server for its operations, whoever makes
                them: enqueues, reads, the runners and waits of the process.
                Each is opened when an operation finds none idle and closed
                after 10 minutes unused; an operation that finds all in use
                waits for one (up to 30 s, then a transient StoreError).
                Listening takes one more connection per runner, and one while
                anything waits for a job's end (see the PostgreSQL guide's
                connection budget).

        Returns:
            The open store; close it with ``close`` (or use it as a context manager).

        Raises:
            StoreError: The target cannot be used (naming it and the cause; it is
                left unchanged), or, without migrate, its schema is missing or older.
            ValueError: A bad secret key (naming its id, never the key),
                durable=False with pooled (set synchronous_commit for the role
                instead), or a max_connections below 1 or given for a SQLite
                file.
            TypeError: pooled is not a bool, listen_url not a str, or
                max_connections not an int (a setting read as text, such as
                ``"0"`` or ``"10"``: convert it first).
        """
        keys = keys_of(secret_keys)
        engine, shown = open_engine(
            target,
            durable=durable,
            busy_timeout=busy_timeout,
            readers=readers,
            upgrade=migrate,
            wal_limit=wal_limit,
            pooled=pooled,
            listen_url=listen_url,
            max_connections=max_connections,
        )
        return cls(
            engine,
            target=shown,
            max_payload_bytes=max_payload_bytes,
            clock=clock,
            secret_keys=keys,
        )

    @classmethod
    async def aopen(cls, target: str | os.PathLike[str], **options: Unpack[OpenOptions]) -> Self:
        """The async form of open, for an event loop (a FastAPI lifespan): it opens off the loop.

        It takes open's keyword options, with the same defaults.
        """
        return await asyncio.to_thread(functools.partial(cls.open, target, **options))

    def get(self, job_id: str) -> Job:
        """Returns the job with id, its result as plain JSON data.

        ``job.model_dump_json()`` is the job as an API returns it.

        Args:
            job_id: The id ``enqueue`` returned.

        Returns:
            The job: its status, result and error.

        Raises:
            JobNotFound: No job has the id (any str, whatever it holds).
            TypeError: job_id is not a str.
        """
        return job_from_row(self.engine.read(GetJob(job_id)))

    async def aget(self, job_id: str) -> Job:
        """The async form of get."""
        return job_from_row(await self.engine.aread(GetJob(job_id)))

    def on_enqueue(self, hook: EnqueueHook) -> EnqueueHook:
        """Runs hook before each job enqueued into this store is stored; returns it (a decorator).

        The hook may add tags or metadata, or raise to refuse the enqueue (nothing
        is stored; the exception reaches the caller). The store's hooks run in the
        order added, before the kind's (``Kind.on_enqueue``).

        Args:
            hook: A plain ``def`` taking a ``jobtable.Enqueueing`` (it also runs in
                the sync ``enqueue``).

        Returns:
            hook, unchanged.

        Raises:
            TypeError: hook is not a plain callable.
        """
        check_hook("Store.on_enqueue", hook)
        self._enqueue_hooks.append(hook)
        return hook

    def now(self) -> str:
        """The store clock's time as stored: UTC text that sorts in time order.

        Returns:
            The time, as the store writes it in created_at and run_at.
        """
        return timestamp(self.clock())

    def cancel(self, job_id: str) -> CancelResult:
        """Cancels the job: at once when queued; through its runner when running.

        A running job's runner cancels an async handler (or tells a sync one,
        through ``ctx.cancelled``) within about a second, and the job then ends
        cancelled (unless it finished first). It acts on one status of the job: it
        holds the job's row from its read to its commit, so a job that a retry or
        snooze puts back in its queue meanwhile is CANCELLED, and FINISHED means it
        had finished.

        Args:
            job_id: The job's id.

        Returns:
            CANCELLED for a queued job, which no handler will run; REQUESTED for a
            running one; FINISHED, changing nothing, for a job that already finished.

        Raises:
            JobNotFound: No job has the id.
            TypeError: job_id is not a str.
        """
        return self.engine.write(CancelJob(job_id, self.now()))

    async def acancel(self, job_id: str) -> CancelResult:
        """The async form of cancel."""
        return await self.engine.awrite(CancelJob(job_id, self.now()))

    def cancel_workflow(self, workflow_id: str) -> int:
        """Cancels every unfinished job of the workflow.

        Its pending and queued jobs are cancelled at once; its running ones get a
        cancel request, as ``cancel`` gives them.

        Args:
            workflow_id: The id ``Workflow.enqueue`` returned.

        Returns:
            How many jobs were pending or queued, now cancelled.

        Raises:
            JobNotFound: No workflow has the id.
            TypeError: workflow_id is not a str.
        """
        return self.engine.write(CancelWorkflow(workflow_id, self.now()))

    async def acancel_workflow(self, workflow_id: str) -> int:
        """The async form of cancel_workflow."""
        return await self.engine.awrite(CancelWorkflow(workflow_id, self.now()))

    def inspect(self, job_id: str) -> JobRecord:
        """Returns the job's whole record.

        A queued job's ``waiting`` says why it waits when flow control holds it
        (see ``WaitReason``), computed as it is read.

        Args:
            job_id: The job's id.

        Returns:
            The record, with its options, times, error history, steps and workflow links.

        Raises:
            JobNotFound: No job has the id.
            TypeError: job_id is not a str.
        """
        return inspected_record(*self.engine.read(InspectJob(job_id, timestamp(self.clock()))))

    async def ainspect(self, job_id: str) -> JobRecord:
        """The async form of inspect."""
        return inspected_record(
            *await self.engine.aread(InspectJob(job_id, timestamp(self.clock())))
        )

    def list_jobs(
        self,
        *,
        status: Status | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[JobRecord]:
        """Returns up to limit job records, newest first, matching every filter given.

        Pages by keyset: pass the ``seq`` of a page's last record as before to get
        the next page.

        Args:
            status: Only jobs in this status.
            kind: Only jobs of this kind.
            queue: Only jobs of this queue.
            tag: Only jobs that have this tag, read from the tag's index in seq order.
            before: Only jobs whose ``seq`` is below it: the last ``seq`` of the
                page before.
            limit: At most this many records, 1 to 1000.

        Returns:
            The records, newest first.

        Raises:
            ValueError: An unknown status, a tag that is not a valid tag, or a limit
                outside 1 to 1000.
        """
        return [
            record_from_row(row)
            for row in self.engine.read(_list(status, kind, queue, before, limit, tag))
        ]

    async def alist_jobs(
        self,
        *,
        status: Status | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[JobRecord]:
        """The async form of list_jobs."""
        rows = await self.engine.aread(_list(status, kind, queue, before, limit, tag))
        return [record_from_row(row) for row in rows]

    def counts(self) -> dict[str, dict[Status, int]]:
        """Returns how many jobs each queue has in each status.

        Returns:
            For each queue that has jobs, its count per status (0s left out).
        """
        return _counts(self.engine.read(count_jobs))

    async def acounts(self) -> dict[str, dict[Status, int]]:
        """The async form of counts."""
        return _counts(await self.engine.aread(count_jobs))

    def _watch_enqueues(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Calls wake after each enqueue through this store commits; returns what stops it.

        A runner uses it to wake an idle worker at once for a job enqueued in
        its own process. wake runs in the enqueuing thread and must return
        quickly; stopping twice does nothing.
        """
        with self._lock:
            self._wakes = (*self._wakes, wake)

        def stop() -> None:
            with self._lock:
                if wake in self._wakes:
                    wakes = list(self._wakes)
                    wakes.remove(wake)
                    self._wakes = tuple(wakes)

        return stop

    def _enqueued(self) -> None:
        """Calls every wake given to _watch_enqueues: an enqueue through the store committed."""
        for wake in self._wakes:
            wake()

    def close(self) -> None:
        """Finishes the writes under way and closes the database; again does nothing."""
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def location(self) -> str:
        """Where the store lives, safe to log: a SQLite file's absolute path, or a URL without
        its password."""
        return self._target

    def __repr__(self) -> str:
        return f"<jobtable.Store {type(self.engine).__name__} {self._target!r}>"
