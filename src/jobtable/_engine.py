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

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")


class ClaimedRow(Protocol):
    """A job a claim marked running: what a worker needs to run it."""

    @property
    def seq(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def payload(self) -> str: ...
    @property
    def attempt(self) -> int: ...


class JobRow(Protocol):
    """A job as GetJob reads it; result is JSON text, error is set only when failed."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def result(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


class HeldRow(Protocol):
    """A running job's id and the attempt of the claim that holds it."""

    @property
    def id(self) -> str: ...
    @property
    def attempt(self) -> int: ...


class RunnerRow(Protocol):
    """A runner's registration: its name and when it started and last beat."""

    @property
    def name(self) -> str: ...
    @property
    def started_at(self) -> str: ...
    @property
    def heartbeat_at(self) -> str: ...


class Queries(Protocol):
    """The queries the runner runs, named as in queries/jobs.sql.

    Times are UTC text from ``jobtable._values.now()``, which sorts in time
    order. Each engine's generated Querier, or an adapter over it, has
    exactly these methods.
    """

    def create_job(self, *, id: str, kind: str, payload: str, now: str) -> None: ...

    def insert_jobs(self, *, kind: str, jobs: Sequence[tuple[str, str]], now: str) -> None:
        """Stores queued jobs of kind, given as (id, payload) pairs, with CreateJobs."""
        ...

    def publish_job_result(self, *, result: str | None, now: str, id: str, attempt: int) -> int: ...

    def succeed_job(self, *, result: str | None, now: str, id: str, attempt: int) -> int: ...

    def fail_job(self, *, error: str | None, now: str, id: str, attempt: int) -> int: ...

    def finish_and_claim_jobs(
        self,
        *,
        ids: list[str],
        attempts: list[int],
        results: list[str | None],
        errors: list[str | None],
        runner: str | None,
        now: str,
        max_jobs: int,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        """Stores finished jobs' outcomes, then claims up to max_jobs queued jobs for runner.

        The claim marks the oldest queued jobs running, one attempt more, and
        returns them in any order (callers sort by seq).

        Job i succeeds with results[i] when errors[i] is None, and otherwise
        fails with errors[i], keeping the result it published; either only
        while it is running under the claim of attempts[i], as SucceedJob and
        FailJob do one job at a time. Returns the ids of the jobs it finished
        and the jobs it claimed.
        """
        ...

    def fail_running_jobs(self, *, error: str | None, now: str, runner: str | None) -> int: ...

    def fail_jobs_of_dead_runners(
        self, *, error: str | None, now: str, runner: str | None, cutoff: str
    ) -> int:
        """Fails the running jobs of runners that beat before cutoff, never runner's own."""
        ...

    def list_running_jobs(self, *, runner: str | None, before: str) -> Sequence[HeldRow]: ...

    def get_job(self, *, id: str) -> JobRow | None: ...

    def delete_finished_jobs(self, *, before: str, max_jobs: int) -> int: ...

    def register_runner(self, *, name: str, now: str) -> None: ...

    def heartbeat_runner(self, *, now: str, name: str) -> int: ...

    def get_runner(self, *, name: str) -> RunnerRow | None: ...

    def delete_runner(self, *, name: str) -> None: ...

    def delete_dead_runners(self, *, cutoff: str, name: str) -> int:
        """Forgets the runners that beat before cutoff, never the one named name."""
        ...


class Statement(Generic[T]):
    """An operation that runs exactly one statement.

    A lone statement is atomic and durable on its own, so an engine may run
    it without BEGIN and COMMIT. Subclasses define ``__call__``.
    """

    __slots__ = ()

    def __call__(self, q: Queries) -> T:
        raise NotImplementedError


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

    def listen(self, wake: Callable[[], None]) -> Callable[[], None] | None:
        """Calls wake, from any thread, when another process enqueues a job.

        It may call wake more often (SQLite: after any commit to the file);
        an extra wake costs the runner one claim that finds nothing.

        Returns a function that stops listening, or None when the engine
        cannot tell (the runner then relies on polling alone).
        """
        ...

    def close(self) -> None: ...
