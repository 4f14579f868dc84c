"""The seam between the runner and a database engine.

The runner never sees a connection or a line of SQL. It hands an engine
operations: functions of a ``Queries`` (the generated ``Querier`` of the
engine's db package, or an adapter in the same shape) that run inside one
transaction. ``write`` and ``awrite`` are the two fronts of the same call, so
no logic exists twice as a sync and an async copy.

An operation that runs exactly one statement may say so by being a
``Statement``; an engine may then skip the transaction's BEGIN and COMMIT,
since a lone statement is atomic and durable on its own. On a server that
saves two of the three round trips a claim costs. The runner's
hot path is such a statement: ``finish_and_claim_jobs`` stores the outcomes of
the jobs that just finished and claims jobs for the workers they freed.
"""

import datetime
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar, runtime_checkable

from jobtable._engines.dashboard_queries import DashboardQueries
from jobtable._engines.flow import FlowQueries
from jobtable._engines.operator_queries import OperatorQueries
from jobtable._engines.rows import (
    BacklogRow,
    ClaimedRow,
    CountRow,
    HeldRow,
    JobRow,
    LabelsRow,
    NewJob,
    Outcome,
    ProgressRow,
    RecordRow,
)
from jobtable._engines.runner_queries import RunnerQueries
from jobtable._engines.step_queries import StepQueries
from jobtable._engines.wait_queries import WaitQueries
from jobtable._engines.workflow_queries import WorkflowQueries

T = TypeVar("T")


class Queries(
    OperatorQueries,
    FlowQueries,
    DashboardQueries,
    RunnerQueries,
    StepQueries,
    WaitQueries,
    WorkflowQueries,
    Protocol,
):
    """The queries jobtable runs, named as in the files of queries/ (jobs, admin, flow, ...).

    Times go in as UTC text from ``jobtable._values.now()``, which sorts in
    time order, and come out as aware UTC datetimes. Each engine's adapter
    over its generated Queriers has exactly these methods.
    """

    def insert_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        """Stores queued jobs of kind with CreateJob (one) or CreateJobs (several)."""
        ...

    def insert_unique_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> list[bool]:
        """Stores each job (each has a unique key) unless its key is held; says which it stored.

        In order, so a job whose key an earlier one of jobs took is not
        stored. The database decides: of concurrent inserts of one key, one
        stores. CreateUniqueJob (one) or CreateUniqueJobs (several).
        """
        ...

    def get_unique_holder(self, *, kind: str, unique_key: str) -> str | None:
        """The id of the job of kind that holds unique_key, or None when none does."""
        ...

    def insert_debounced_job(self, *, kind: str, job: NewJob, now: str) -> bool:
        """Stores job, which has a debounce key, unless a job of kind holds it; says whether.

        The database decides (jobs_debounce): of concurrent inserts of one
        key, one stores. CreateDebouncedJob.
        """
        ...

    def debounce_job(
        self, *, kind: str, debounce_key: str, payload: str, replace: bool, run_at: str, now: str
    ) -> str | None:
        """Gives the job of kind holding debounce_key run_at, and payload when replace; its id.

        None when no job holds the key (DebounceJob).
        """
        ...

    def get_job_progress(self, *, id: str) -> ProgressRow | None:
        """The job as a stream reads it: status, latest result, error, count of partials."""
        ...

    def publish_job_result(self, *, result: str | None, now: str, id: str, attempt: int) -> int: ...

    def succeed_job(
        self, *, result: str | None, now: str, id: str, attempt: int, run_trace: str | None
    ) -> int: ...

    def fail_job(
        self, *, error: str | None, now: str, id: str, attempt: int, run_trace: str | None
    ) -> int: ...

    def finish_and_claim_jobs(
        self,
        *,
        outcomes: Sequence[Outcome],
        runner: str | None,
        queue: str,
        now: str,
        max_jobs: int,
        kinds: Sequence[str] | None = None,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        """Stores finished attempts' outcomes, then claims up to max_jobs ready jobs of queue.

        The claim marks the ready jobs of queue (of kinds only, when given)
        running, lowest priority and then oldest first, one attempt more, and
        returns them in any order (callers sort by priority and seq). Each
        outcome is stored only while its job is running under the claim of
        its attempt, as SucceedJob, FailJob, RetryJob, SnoozeJob and
        CancelRunningJob do one job at a time. Returns the ids of the jobs
        whose outcome it stored and the jobs it claimed.
        """
        ...

    def next_run_at(self, *, queue: str) -> datetime.datetime | None:
        """The earliest run_at among the scheduled jobs of queue, or None when none waits."""
        ...

    def stage_jobs(self, *, queue: str, now: str) -> int:
        """Makes the scheduled jobs of queue whose run_at is not later than now ready."""
        ...

    def ready_retries(self, *, queue: str) -> int:
        """Makes the queued jobs of queue that wait for another attempt ready now (for tests)."""
        ...

    def interrupt_running_jobs(self, *, error: str, now: str, runner: str) -> int: ...

    def interrupt_job(self, *, error: str, now: str, id: str, attempt: int) -> int: ...

    def list_running_jobs(self, *, runner: str | None, before: str) -> Sequence[HeldRow]: ...

    def list_cancel_requests(self, *, runner: str) -> Sequence[HeldRow]: ...

    def lock_job(self, *, id: str) -> str | None: ...  # LockJob: None when no job has id

    def cancel_queued_job(self, *, now: str, id: str) -> int: ...

    def request_cancel(self, *, now: str, id: str) -> int: ...

    def notify_cancel(self) -> None:
        """Tells listening runners, once the transaction commits, that a cancel was requested.

        Engines that cannot notify do nothing: their runners poll for requests.
        """
        ...

    def get_job(self, *, id: str) -> JobRow | None: ...

    def get_jobs(self, *, ids: Sequence[str]) -> Sequence[JobRow]:
        """The jobs with ids, in any order; an id no job has gives no row (GetJobs)."""
        ...

    def get_job_record(self, *, id: str) -> RecordRow | None: ...

    def get_job_labels(self, *, id: str) -> LabelsRow | None: ...

    def list_jobs(
        self,
        *,
        before: int,
        status: str | None,
        kind: str | None,
        queue: str | None,
        tag: str | None,
        max_jobs: int,
    ) -> Sequence[RecordRow]: ...

    def count_jobs(self) -> Sequence[CountRow]: ...

    def count_ready_jobs(self) -> Sequence[BacklogRow]: ...

    def count_due_jobs(self, *, now: str) -> Sequence[BacklogRow]: ...

    def delete_finished_jobs(self, *, before: str, max_jobs: int) -> int: ...


class Statement(Generic[T]):
    """An operation that runs exactly one statement, or reads after it.

    A lone statement is atomic and durable on its own, so an engine may run
    it without BEGIN and COMMIT; so is a write whose outcome the database
    decides, followed by a statement that needs no atomicity with it (a
    unique enqueue reading the holder, outcomes of workflows' jobs stored
    with their dependents before a claim). Subclasses define ``__call__``.
    """

    __slots__ = ()

    def __call__(self, q: Queries) -> T:
        raise NotImplementedError


class JobInserts(Protocol):
    """The one query an enqueue runs: storing new jobs. ``Queries`` has it too."""

    def insert_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        """Stores queued jobs of kind, as ``Queries.insert_jobs`` does."""
        ...


class Insert(Generic[T]):
    """An operation that only stores new jobs and reads nothing back: a capability.

    It needs no more than ``JobInserts``, so an engine may gather several in
    one statement (PostgreSQL's group commit does); called with ``Queries``
    it does the same. Subclasses define ``insert``.
    """

    __slots__ = ()

    def insert(self, q: JobInserts) -> T:
        """Stores this operation's jobs through q."""
        raise NotImplementedError

    def __call__(self, q: Queries) -> T:
        return self.insert(q)


def as_insert(op: Callable[[Queries], T]) -> Insert[T] | None:
    """op as an ``Insert`` when it is one (it only stores new jobs), else None."""
    return op if isinstance(op, Insert) else None


class Engine(Protocol):
    """One database behind the runner.

    ``write`` runs an operation in a write transaction and returns once it is
    committed (durably, unless the store was opened otherwise); an exception
    the operation raises rolls back its writes and reaches the caller.
    ``read`` runs an operation that only reads. Both are safe from any thread;
    ``awrite`` and ``aread`` do the same without blocking the event loop.
    An operation that is a ``Statement`` may run without BEGIN and COMMIT.
    """

    def write(self, op: Callable[[Queries], T]) -> T: ...

    async def awrite(self, op: Callable[[Queries], T]) -> T: ...

    def read(self, op: Callable[[Queries], T]) -> T: ...

    async def aread(self, op: Callable[[Queries], T]) -> T: ...

    def write_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Runs the write op on conn, the application's own connection, inside its transaction.

        conn is the engine's driver connection (sqlite3, psycopg); op's
        writes join its transaction, so they are kept if and only if that
        commits, and runners learn of new jobs at the commit as of any other
        process's. An exception from op leaves none of its writes in the
        transaction. Raises TypeError, naming where, for a connection of
        another driver, and ValueError for one that does not reach the
        store's jobs table (another file or database; PostgreSQL: a
        search_path that finds no jobs table, or another schema's); a driver
        error is a StoreError.
        """
        ...

    async def awrite_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """The async form of write_in, for the driver's async connection."""
        ...

    def read_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Runs op, which only reads, on conn in its transaction, seeing its uncommitted writes.

        conn is checked as write_in checks it, and errors are the same.
        jobtable.testing reads a test's transaction with it.
        """
        ...

    async def aread_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """The async form of read_in, for the driver's async connection."""
        ...

    def listen(
        self,
        wake: Callable[[], None],
        cancelled: Callable[[], None] | None = None,
        ready: Callable[[str], None] | None = None,
    ) -> Callable[[], None] | None:
        """Calls wake, from any thread, when another process enqueues a job.

        It may call wake more often (SQLite: after any commit to the file);
        an extra wake costs the runner one claim that finds nothing. Where the
        engine can tell (PostgreSQL), it calls cancelled instead when a
        running job's cancel was requested (see ``Queries.notify_cancel``),
        and ready(queue) instead when a job that ended may have released a
        held job of queue (a sequence's next job, a freed limited slot); an
        engine that cannot tell which queue calls wake for those too.

        Returns a function that stops listening, or None when the engine
        cannot tell (the runner then relies on polling alone).
        """
        ...

    def close(self) -> None: ...


@runtime_checkable
class EndedJobs(Protocol):
    """An engine that can tell, as their commit happens, that jobs ended: a capability.

    Processes waiting for jobs' results (``Kind.wait``) listen through it;
    without it they poll.
    """

    def listen_ended(self, wake: Callable[[str], None]) -> Callable[[], None] | None:
        """Calls wake(ids), from any thread, after a commit that may have ended jobs.

        ids names the jobs one a line, or is "" when the engine cannot say
        which (then every waited-for job must be checked); an extra call
        costs one check. Returns what stops listening (calling it again does
        nothing), or None when the engine cannot tell.
        """
        ...
