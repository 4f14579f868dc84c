"""What a handler gets besides its payload: its identity, labels, publishing, steps, stop."""

import datetime
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, overload

from jobtable._engines.base import Queries
from jobtable._engines.rows import LabelsRow
from jobtable._engines.workflow_queries import DependencyRow
from jobtable._labels import Labels
from jobtable._runner.attempt import Resume
from jobtable._runner.shared import Stop
from jobtable._signal import Signal, TimedOut
from jobtable._store import Store
from jobtable._workflow import FanOut, Node, Workflow

if TYPE_CHECKING:
    from jobtable._kind import Kind

R = TypeVar("R")
A = TypeVar("A")
T = TypeVar("T")
S = TypeVar("S")


class Running(Protocol[R]):
    """The attempt a context belongs to, as the executor keeps it."""

    @property
    def ended(self) -> bool:
        """True once the attempt ended without its handler: a timeout or a cancel."""
        ...

    adds: FanOut | None
    """The jobs the handler added to its workflow, stored with its success only."""

    def publish(self, partial: R) -> None:
        """Stores partial as the job's result while it runs; blocks until stored."""
        ...

    async def apublish(self, partial: R) -> None:
        """Stores partial as the job's result while it runs."""
        ...

    @property
    def resume(self) -> Resume[R]:
        """The attempt's steps and its job's last partial result."""
        ...


class Dependency(NamedTuple):
    """A job a workflow's job depends on: its id, kind and status (a ``jobtable.Status`` value)."""

    id: str
    kind: str
    status: str


def _list_dependencies(job_id: str) -> "Callable[[Any], Sequence[DependencyRow]]":
    return lambda q: q.list_dependencies(job=job_id)


class JobContext(Generic[R]):
    """The running job, as its handler sees it.

    ``publish`` (from a plain ``def`` handler, which runs in a thread) and
    ``apublish`` (from an ``async def`` handler) store a partial result that
    ``get`` returns while the job runs; they raise ``NotRunning`` when the job
    is no longer running under this claim, e.g. after its runner lost its
    lease. A store error is retried with capped backoff for up to the
    runner's lease (not once stop began); after that it raises ``StoreError``.
    ``stopping`` turns true when the runner begins to stop: a handler
    that can stop early should check it, or wait with ``sleep``/``asleep``,
    which return early on stop. ``cancelled`` turns true when the attempt has
    ended without the handler: it ran past its timeout, its job was
    cancelled, or the runner's grace period ran out. An async handler is
    cancelled then; a plain ``def`` one cannot be, so it should check
    ``cancelled`` and return: whatever it does after is fenced off. ``tags``
    and ``meta`` are what the job was enqueued with.

    The runner makes one for each attempt; a handler never makes one.

    Args:
        id: The job's id.
        kind: The job's kind.
        attempt: How many times the job has been claimed, this claim included.
        stop: The runner's stop.
        running: The attempt's state.
        labels: Reads the job's tags and metadata.
    """

    __slots__ = (
        "_fanout",
        "_labels",
        "_result_type",
        "_running",
        "_stop",
        "_store",
        "attempt",
        "id",
        "kind",
        "workflow_id",
    )

    def __init__(
        self,
        *,
        id: str,
        kind: str,
        attempt: int,
        stop: Stop,
        running: Running[R],
        labels: "Callable[[], tuple[list[str], Any]] | None" = None,
    ) -> None:
        self.id = id
        """The job's id."""
        self.kind = kind
        """The job's kind."""
        self.attempt = attempt
        """How many times the job has been claimed, this claim included."""
        self._stop = stop
        self._running = running
        self._labels = labels
        self._store: Store | None = None
        self.workflow_id: str | None = None
        """The id of the job's workflow, None for a job of none."""
        self._fanout: FanOut | None = None
        self._result_type: object = None

    @property
    def tags(self) -> list[str]:
        """The job's tags: its kind's and its enqueue's (see ``jobtable.Kind``)."""
        return [] if self._labels is None else self._labels()[0]

    @property
    def meta(self) -> Any:
        """The job's metadata: an instance of its kind's meta model, or a dict without one.

        Read before the handler runs when the kind declares a meta model or
        the runner has attempt or outcome hooks; otherwise the first read of
        ``tags`` or ``meta`` reads it from the store (briefly blocking).
        """
        return {} if self._labels is None else self._labels()[1]

    @property
    def stopping(self) -> bool:
        """True once the runner has begun to stop."""
        return self._stop.is_set()

    @property
    def cancelled(self) -> bool:
        """True once this attempt ended without the handler: a timeout, a cancel, a stop's end."""
        return self._running.ended

    def publish(self, partial: R) -> None:
        """Stores partial as the job's result while it runs; blocks until stored.

        For a plain ``def`` handler, which runs in a thread.

        Args:
            partial: The partial result, an R; ``get`` returns it while the job runs.

        Raises:
            NotRunning: The job is no longer running under this claim (its runner
                lost its lease, say).
            ResultError: partial is not an R, or is over max_result_bytes; nothing
                is stored.
            StoreError: The store kept failing for the runner's lease (retried with
                capped backoff meanwhile, not once stop began).
        """
        self._running.publish(partial)

    async def apublish(self, partial: R) -> None:
        """The async form of publish, for an ``async def`` handler."""
        await self._running.apublish(partial)

    def sleep(self, seconds: float) -> bool:
        """Blocks for seconds, or less if the runner stops.

        Args:
            seconds: How long to block.

        Returns:
            Whether the runner is stopping.
        """
        return self._stop.block(seconds)

    async def asleep(self, seconds: float) -> bool:
        """The async form of sleep: waits for seconds, or less if the runner stops."""
        return await self._stop.wait(seconds)

    @overload
    async def step(
        self, name: str, fn: Callable[[A], Awaitable[T]], arg: A, *, returns: type[T] | None = None
    ) -> T: ...
    @overload
    async def step(
        self, name: str, fn: Callable[[A], T], arg: A, *, returns: type[T] | None = None
    ) -> T: ...
    async def step(
        self, name: str, fn: Callable[[A], Any], arg: A, *, returns: type[Any] | None = None
    ) -> Any:
        """Runs fn(arg), awaited if async, once per job as the step name; returns its output.

        The first time, the output is checked against fn's return annotation (or
        returns) and stored as a result is, in one write fenced by this attempt's
        claim; a later attempt of the job gets the stored output instead, and fn
        does not run. An exception of fn propagates and records nothing.

        Args:
            name: The step's name, unique within the job.
            fn: The step, a plain or async function of one argument.
            arg: What fn is called with.
            returns: The output's type, when fn has no return annotation.

        Returns:
            fn's output, or the output stored by an earlier attempt.

        Raises:
            TypeError: fn has no return annotation and returns is not given (before
                fn runs).
            StepError: name was used before in this attempt, or the output does not
                fit its type; nothing is stored.
            NotRunning: The claim is gone.
        """
        return await self._running.resume.step(name, fn, arg, returns)

    def step_sync(
        self, name: str, fn: Callable[[A], T], arg: A, *, returns: type[T] | None = None
    ) -> T:
        """``step`` for a plain ``def`` handler: fn must be a plain function; blocks as publish.

        Args:
            name: The step's name, unique within the job.
            fn: The step, a plain function of one argument.
            arg: What fn is called with.
            returns: The output's type, when fn has no return annotation.

        Returns:
            fn's output, or the output stored by an earlier attempt.

        Raises:
            TypeError: fn is async, or has no return annotation and returns is not
                given.
            StepError: As step raises it.
            NotRunning: The claim is gone.
        """
        return self._running.resume.step_sync(name, fn, arg, returns)  # type: ignore[no-any-return]

    async def sleep_until(self, when: datetime.datetime) -> None:
        """Sleeps until when (an aware datetime) without holding a worker; returns once it came.

        Before when, the attempt ends here: the job goes back to its queue,
        scheduled at when and using none of its attempts, and its handler
        runs again then from the top, its completed steps skipped, this call
        returning at once. The time is recorded as the job's first claim of
        this sleep chose it, so a restart or a kill changes nothing. Sleeps
        and waits are known by their order in the handler (see ``step``):
        make them in the same order each run. Code after it runs once when
        has come, as code after a step does.

        Args:
            when: The moment to sleep until, an aware datetime.

        Raises:
            TypeError: when is not a datetime.
            ValueError: when is naive (it has no time zone).
            NotRunning: The claim is gone.
        """
        waiting = self._running.resume.waiting()
        await waiting.off_loop(waiting.sleep_until, when)

    def sleep_until_sync(self, when: datetime.datetime) -> None:
        """``sleep_until`` for a plain ``def`` handler.

        Args:
            when: The moment to sleep until, an aware datetime.

        Raises:
            TypeError: As sleep_until raises it.
            ValueError: As sleep_until raises it.
            NotRunning: The claim is gone.
        """
        self._running.resume.waiting().sleep_until(when)

    async def sleep_for(self, delta: datetime.timedelta) -> None:
        """``sleep_until`` the moment delta after this sleep was first reached (recorded then).

        Args:
            delta: How long to sleep, a timedelta, counted from the first time
                the job reached this sleep (a later run of the handler does
                not restart it).

        Raises:
            TypeError: delta is not a timedelta.
            NotRunning: The claim is gone.
        """
        waiting = self._running.resume.waiting()
        await waiting.off_loop(waiting.sleep_for, delta)

    def sleep_for_sync(self, delta: datetime.timedelta) -> None:
        """``sleep_for`` for a plain ``def`` handler.

        Args:
            delta: How long to sleep, as for sleep_for.

        Raises:
            TypeError: delta is not a timedelta.
            NotRunning: The claim is gone.
        """
        self._running.resume.waiting().sleep_for(delta)

    @overload
    async def wait_for(
        self,
        signal: Signal[S],
        *,
        key: str,
        timeout: None = None,  # noqa: ASYNC109 (durable, over restarts: not asyncio's)
    ) -> S: ...
    @overload
    async def wait_for(
        self,
        signal: Signal[S],
        *,
        key: str,
        timeout: datetime.timedelta,  # noqa: ASYNC109
    ) -> S | TimedOut: ...
    async def wait_for(
        self,
        signal: Signal[S],
        *,
        key: str,
        timeout: datetime.timedelta | None = None,  # noqa: ASYNC109
    ) -> S | TimedOut:
        """Waits for signal under key without holding a worker; returns its payload.

        A signal of that name and key sent before (and kept) or after the
        wait began answers it: the oldest one this job has not received.
        Until one comes, the attempt ends here and the job goes back to its
        queue, using none of its attempts; a signal (``Store.signal``) makes
        it ready at once, and its handler runs again from the top, its steps
        skipped, this call returning the payload. With a timeout, measured
        from the first time the wait was reached, a wait that got nothing
        returns ``TimedOut`` (so its type is ``S | TimedOut``). A signal
        whose payload no longer validates as the signal's type is logged and
        skipped. Make waits in the same order each run, as steps.

        Args:
            signal: The signal to wait for, a ``Signal``.
            key: The key it must be sent under, a non-empty str.
            timeout: How long to wait, a timedelta counted from the first time
                the wait was reached; None waits with no limit.

        Returns:
            The signal's payload, or ``TimedOut`` when timeout passed first.

        Raises:
            TypeError: signal is not a Signal, key is not a non-empty str, or
                timeout is not a timedelta.
            NotRunning: The claim is gone.
            SecretKeyError: The payload holds a secret that the store's secret
                keys cannot decrypt.
        """
        waiting = self._running.resume.waiting()
        return await waiting.off_loop(waiting.wait_for, signal, key, timeout)

    @overload
    def wait_for_sync(self, signal: Signal[S], *, key: str, timeout: None = None) -> S: ...
    @overload
    def wait_for_sync(
        self, signal: Signal[S], *, key: str, timeout: datetime.timedelta
    ) -> S | TimedOut: ...
    def wait_for_sync(
        self, signal: Signal[S], *, key: str, timeout: datetime.timedelta | None = None
    ) -> S | TimedOut:
        """``wait_for`` for a plain ``def`` handler.

        Args:
            signal: The signal to wait for, a ``Signal``.
            key: The key it must be sent under, a non-empty str.
            timeout: How long to wait, as for wait_for; None waits with no
                limit.

        Returns:
            The signal's payload, or ``TimedOut`` when timeout passed first.

        Raises:
            TypeError: As wait_for raises it.
            NotRunning: The claim is gone.
            SecretKeyError: As wait_for raises it.
        """
        return self._running.resume.waiting().wait_for(signal, key, timeout)

    @property
    def last_partial(self) -> R | None:
        """The last partial result stored for the job, by an earlier attempt or this one; or None.

        A retried attempt keeps the partial result of the one before (an
        operator's retry of a finished job clears it). The first read asks
        the store (briefly blocking); a publish of this attempt replaces it.
        """
        return self._running.resume.last_partial()

    @property
    def workflow(self) -> FanOut:
        """The job's workflow, to add jobs to: stored with this attempt's success, and only then.

        ``ctx.workflow.add(kind, payload, after=[...])`` as ``Workflow.add``;
        ``ctx.workflow.current`` is this job, as a dependency. Raises
        ValueError for a job of no workflow.
        """
        if self._fanout is None:
            if self._store is None or self.workflow_id is None:
                raise ValueError(f"job {self.id}: only a job of a workflow can add jobs to it")
            self._fanout = FanOut(
                self.workflow_id, self.id, self.kind, self._store, self._result_type
            )
            self._running.adds = self._fanout
        return self._fanout

    def add_workflow(self, sub: Workflow, *, result: "Node[Any, R] | None" = None) -> None:
        """Adds sub's jobs to this job's workflow; result's result goes to this job's dependents.

        The typed form of ``ctx.workflow.add_workflow``: mypy checks that
        result's kind returns this job's result type R. Every job of sub joins
        this job's workflow, stored with this attempt's success and only then;
        sub's nodes are nodes of ``ctx.workflow`` afterwards. With result,
        this job's dependents not yet started also wait for result, and one
        this job feeds takes result's result as its payload: the job finishes
        and frees its worker, and its dependents wait for the sub-workflow.

        Args:
            sub: The workflow to add, built with ``Workflow.add`` and not stored.
            result: A node of sub whose result this job's dependents take, an R;
                None leaves them waiting for this job only.

        Raises:
            ValueError: The job belongs to no workflow, sub was stored or added
                already or has no job, or result is not a node of sub.
            TypeError: sub is not a Workflow, or result's type is not R.
            PayloadError: A job of sub does not fit its kind; nothing is added.
        """
        self.workflow.add_workflow(sub, result=result)

    def _rows(self) -> "Sequence[DependencyRow]":
        if self._store is None:
            return []
        return self._store.engine.read(_list_dependencies(self.id))

    async def _arows(self) -> "Sequence[DependencyRow]":
        if self._store is None:
            return []
        return await self._store.engine.aread(_list_dependencies(self.id))

    def dependencies(self) -> list[Dependency]:
        """The jobs this job of a workflow depends on, in enqueue order (none for other jobs).

        Their statuses tell a job that runs after failures (``on_failure="run"``)
        what succeeded, failed or was cancelled. Blocks briefly: it reads the store.

        Returns:
            Each dependency's id, kind and status.
        """
        return [Dependency(r.id, r.kind, r.status) for r in self._rows()]

    async def adependencies(self) -> list[Dependency]:
        """The async form of dependencies."""
        return [Dependency(r.id, r.kind, r.status) for r in await self._arows()]

    def results(self, kind: "Kind[Any, T]") -> list[T]:
        """The results of the dependencies of kind that succeeded, in enqueue order, as kind's R.

        Args:
            kind: The dependencies' kind; each result is validated as its R.

        Returns:
            The results, in the dependencies' enqueue order.

        Raises:
            ValueError: The job has no dependency of kind (an empty list would read
                as "none succeeded").
            ResultError: A stored result no longer validates.
        """
        return self._decoded(kind, self._rows())

    async def aresults(self, kind: "Kind[Any, T]") -> list[T]:
        """The async form of results."""
        return self._decoded(kind, await self._arows())

    def _decoded(self, kind: "Kind[Any, T]", rows: "Sequence[DependencyRow]") -> list[T]:
        if not any(r.kind == kind.name for r in rows):
            kinds = sorted({r.kind for r in rows})
            raise ValueError(
                f"job {self.id}: results({kind.name!r}): the job has no dependency of kind "
                f"{kind.name!r} (its dependencies' kinds: {kinds or 'none'}); "
                f"add one with after=[node], or read another kind's results"
            )
        keys = None if self._store is None else self._store.secret_keys
        return [
            kind._codec.decode_result(r.result, r.id, keys)
            for r in rows
            if r.kind == kind.name and r.status == "succeeded" and r.result is not None
        ]


class JobLabels:
    """Reads a job's tags and metadata once: before the attempt, or at the first use.

    The claim does not return them (a job's tags and metadata are read by
    few handlers, and every claim would carry them), so a handler whose
    kind declares a meta model, or a runner with hooks, reads them before
    the handler runs, off the event loop; otherwise ``ctx.meta`` reads them
    when first used. Metadata is decoded with the kind's meta model.
    """

    __slots__ = ("_job_id", "_labels", "_store", "_value")

    def __init__(self, store: Store, job_id: str, labels: Labels | None) -> None:
        self._store = store
        self._job_id = job_id
        self._labels = labels
        self._value: tuple[list[str], Any] | None = None

    @classmethod
    async def read(
        cls, store: Store, job_id: str, labels: Labels | None, *, eager: bool
    ) -> "JobLabels":
        """The labels of job_id, read now when eager or when labels has a meta model."""
        made = cls(store, job_id, labels)
        if eager or (labels is not None and labels.meta.model is not None):
            made._value = made._decode(await store.engine.aread(made._query))
        return made

    def _query(self, q: Queries) -> LabelsRow | None:
        return q.get_job_labels(id=self._job_id)

    def _decode(self, row: LabelsRow | None) -> tuple[list[str], Any]:
        tags: list[str] = [] if row is None else json.loads(row.tags)
        meta = None if row is None else row.meta
        if self._labels is None:
            return tags, {} if meta is None else json.loads(meta)
        return tags, self._labels.meta.decode(meta)

    def __call__(self) -> tuple[list[str], Any]:
        """The tags and the metadata, read from the store now if they were not yet."""
        if self._value is None:
            self._value = self._decode(self._store.engine.read(self._query))
        return self._value
