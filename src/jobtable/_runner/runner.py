"""The runner: a worker process's handlers, and the services that run their jobs.

It wires its services, each owning its own state, with explicit hand-offs:
the producer claims jobs for free worker slots, in the task of the free worker
whose turn it is; the executor runs a job and decides its outcome, which the
worker hands back with its slot, for the completer to store with the next
claim or at once; maintenance renews the lease, interrupts dead runners' jobs
(retried while attempts remain, else failed) and prunes; the cancel watch
hands on cancel requests; the periodic scheduler enqueues ticks.
"""

import asyncio
import contextlib
import datetime
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar, overload

from jobtable._backoff import WriteBackoff
from jobtable._batch import BatchKind
from jobtable._errors import RunnerError
from jobtable._flow import Queue
from jobtable._job import Job
from jobtable._kind import Kind
from jobtable._operator.queues import check_declared
from jobtable._runner.cancel_watch import CancelWatch
from jobtable._runner.completer import Completer
from jobtable._runner.contact import StoreContact, StoreTrouble
from jobtable._runner.executor import Executor
from jobtable._runner.handler import (
    AsyncHandler,
    Attach,
    AttachBatch,
    Handlers,
    SyncHandler,
    annotated_types,
)
from jobtable._runner.hooks import RunnerHooks
from jobtable._runner.loop_watch import LoopWatch
from jobtable._runner.maintenance import Maintenance
from jobtable._runner.periodic import PeriodicScheduler
from jobtable._runner.process_guard import LAST_WRITE, ProcessGuard, run_loop
from jobtable._runner.producer import Producer
from jobtable._runner.registration import DeleteRunner
from jobtable._runner.run_operations import PausedQueues
from jobtable._runner.shared import (
    RETRY,
    Settings,
    Shared,
    Stop,
    check_queues,
    check_settings,
    runner_name,
)
from jobtable._runner.workers import WorkerPool
from jobtable._store import Store

P = TypeVar("P")
R = TypeVar("R")


class Runner:
    """Owns the job handlers and the pools of workers that run their jobs.

    Each of the runner's queues has a fixed pool of workers of its own, so a
    flood of one queue never starves another. A queue's workers claim its
    ready jobs lowest priority first, oldest first within one. An enqueue in
    this process wakes an idle worker at once; jobs enqueued by other
    processes are found at once where the engine can notify (PostgreSQL;
    SQLite where inotify works), else by polling. Runners sharing a database
    know each other by name and a heartbeat: one whose heartbeat is older
    than the lease is dead, and its running jobs are interrupted; so is one
    of this host whose process is gone, at once.

    Args:
        store: The store whose jobs the runner runs.
        workers: Shorthand for ``queues={"default": workers}``; 4 when
            neither is given.
        queues: How many workers each queue gets, by queue name.
        logger: Where the runner logs; None is ``logging.getLogger("jobtable")``.
        name: Identifies this runner among the runners of the database; None
            is the host name and process id (see ``name``).
        poll_interval: Seconds an idle runner waits before it looks for jobs
            enqueued elsewhere.
        lease: Seconds without a heartbeat after which a runner counts as dead.
        grace_period: Seconds running handlers get to finish after stop.
        cancel_grace: Seconds a cancelled handler gets to end before the
            runner gives up on it.
        block_warning: Seconds an async handler may block the event loop
            before a warning names its job; None warns never.
        only_kinds: Claim only the kinds the runner has handlers for, instead
            of failing the others' jobs.
        retention: Finished jobs older than it are deleted; None keeps them.
        signal_retention: Signals older than it are deleted (a wait that
            begins later no longer receives them); None keeps them.
        max_payload_bytes: The largest encoded payload the kinds ``register``
            returns accept.
        max_result_bytes: The largest encoded result or partial result; a
            bigger publish raises, a bigger result fails its job.
        retry_backoff: The wait between retries of a failed claim or outcome
            write.
        give_up_after: How many tries an outcome write gets once stop has
            begun.
        cancel_check: Seconds between the runner's looks for cancel requests
            of its running jobs.
        flow: Queues' limits, declared across every runner (see ``Queue``);
            start writes them to the store.

    Raises:
        TypeError: store is not a Store, or another setting is of the wrong
            type (named).
        ValueError: A setting out of range (named), such as a non-positive
            interval or worker count.
    """

    queues: dict[str, int]
    """How many workers each queue the runner consumes has, by queue name."""
    flow: tuple[Queue, ...]
    """The flow control the runner's code declares (``Queue``); start writes it to the store."""
    store: Store
    """The store the runner's jobs live in."""
    workers: int
    """How many jobs the runner runs at once, over all its queues."""
    logger: logging.Logger
    """Where the runner logs; records about a job carry its job_id and kind as fields."""
    name: str
    """Identifies this runner among the runners that share the database.

    A runner that starts interrupts at once the jobs an earlier runner of
    the same name left running, so each worker process needs its own name. The
    default, host name and process id, differs per process (``uvicorn
    --workers N`` gets N names); a restarted process gets a new one, and
    interrupts its predecessor's jobs at once too when both ran on this host
    (the kernel says that process is gone), else once that lease expires.
    """
    max_payload_bytes: int
    """The largest encoded payload the kinds ``register`` returns accept."""

    def __init__(
        self,
        store: Store,
        *,
        workers: int | None = None,
        queues: dict[str, int] | None = None,
        logger: logging.Logger | None = None,
        name: str | None = None,
        poll_interval: float = 1.0,
        lease: float = 30.0,
        grace_period: float = 10.0,
        cancel_grace: float = 5.0,
        block_warning: float | None = 1.0,
        only_kinds: bool = False,
        retention: datetime.timedelta | None = datetime.timedelta(days=7),
        signal_retention: datetime.timedelta | None = datetime.timedelta(days=7),
        max_payload_bytes: int = 1 << 20,
        max_result_bytes: int = 1 << 20,
        retry_backoff: WriteBackoff = RETRY,
        give_up_after: int = 8,
        cancel_check: float = 0.5,
        flow: Iterable[Queue] = (),
    ) -> None:
        self.queues = check_queues(workers, queues)
        self.flow = check_declared("jobtable", flow)
        settings = check_settings(
            store=store,
            logger=logger,
            poll_interval=poll_interval,
            lease=lease,
            cancel_check=cancel_check,
            grace_period=grace_period,
            cancel_grace=cancel_grace,
            block_warning=block_warning,
            only_kinds=only_kinds,
            retention=retention,
            signal_retention=signal_retention,
            max_payload_bytes=max_payload_bytes,
            max_result_bytes=max_result_bytes,
            retry_backoff=retry_backoff,
            give_up_after=give_up_after,
        )
        self.store = store
        self.workers = sum(self.queues.values())
        self.logger = logger if logger is not None else logging.getLogger("jobtable")
        self.name = runner_name(name)
        self.max_payload_bytes = max_payload_bytes
        self._handlers = Handlers(self.queues)
        self._build_services(settings)
        self._before_start()

    def _build_services(self, settings: Settings) -> None:
        """Makes the runner's services, which share its store, name, logger, settings and stop."""
        self._settings = settings
        contact = StoreContact.of_runner(settings.lease)
        trouble = StoreTrouble(self.logger, self.name)
        shared = Shared(self.store, self.name, self.logger, settings, Stop(), contact, trouble)
        self._stop = shared.stop
        self._executor = Executor(shared, self._handlers)
        self._completer = Completer(shared)
        self._producers = [Producer(shared, self._completer, queue=q) for q in self.queues]
        self._cancel_watch = CancelWatch(
            shared, busy=self._executor.busy, cancel=self._executor.cancel
        )
        self._maintenance = Maintenance(
            shared, held=self._completer.held, missing_keys=self._executor.missing_keys
        )
        self._periodic = PeriodicScheduler(shared)
        self._pool = WorkerPool(shared, self._executor, self._completer, self._producers)

    def _before_start(self) -> None:
        """Sets the state of a runner not yet started: no loop, no tasks, no watches."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []  # the services'; the pool has the workers'
        self.periodic = self._periodic.add  # see PeriodicScheduler.add
        self._unwatch: Callable[[], None] | None = None
        self._unlisten: Callable[[], None] | None = None
        self._grace_timer: asyncio.TimerHandle | None = None
        self._loop_watch: LoopWatch | None = None
        self._stopped = False

    @property
    def poll_interval(self) -> float:
        """Seconds an idle runner waits before it looks for jobs enqueued elsewhere."""
        return self._settings.poll_interval

    @property
    def lease(self) -> float:
        """Seconds without a heartbeat after which a runner counts as dead."""
        return self._settings.lease

    @property
    def grace_period(self) -> float:
        """Seconds running handlers get to finish after stop, before they are cancelled."""
        return self._settings.grace_period

    @property
    def max_result_bytes(self) -> int:
        """The largest encoded result or partial result; a bigger publish raises, a result fails."""
        return self._settings.max_result_bytes

    def __repr__(self) -> str:
        return f"Runner(name={self.name!r}, queues={self.queues}, kinds={list(self.kinds)})"

    @property
    def hooks(self) -> RunnerHooks:
        """The runner's hooks around each attempt and on each outcome (see ``RunnerHooks``)."""
        return self._handlers.hooks

    @overload
    def handler(self, kind: BatchKind[P, R]) -> AttachBatch[P, R]: ...  # type: ignore[overload-overlap]

    @overload
    def handler(self, kind: Kind[P, R]) -> Attach[P, R]: ...

    def handler(self, kind: Kind[P, R]) -> Attach[P, R] | AttachBatch[P, R]:
        """Returns a decorator that makes the function it decorates the handler of kind's jobs.

        The function takes ``(ctx: JobContext[R], payload: P)`` and returns an R,
        where P and R are kind's types; mypy rejects one whose annotations do not
        match. A ``BatchKind``'s takes ``(jobs: Sequence[BatchJob[P, R]])`` and
        returns a sequence of one ``R | Failure`` per job, in order (see
        ``BatchKind``). It must be attached before start, once per kind. The
        decorated function is returned unchanged.

        Args:
            kind: The kind whose jobs the function handles.

        Returns:
            The decorator.

        Raises:
            TypeError: kind is not a Kind, or the function is not a handler (naming
                the kind).
            RunnerError: The kind already has a handler, its queue is not one of
                the runner's, or the runner started (naming the kind).
        """
        if not isinstance(kind, Kind):
            raise TypeError(f"handler: want a jobtable.Kind, got {type(kind).__name__}")
        if isinstance(kind, BatchKind):
            where, handlers = f"handler {kind.name!r}", self._handlers
            return AttachBatch(kind.name, lambda fn: handlers.attach(where, kind, fn))
        return Attach(self._handlers, kind)

    @overload
    def register(self, kind: str, handler: AsyncHandler[R, P]) -> Kind[P, R]: ...

    @overload
    def register(self, kind: str, handler: SyncHandler[R, P]) -> Kind[P, R]: ...

    def register(self, kind: str, handler: AsyncHandler[R, P] | SyncHandler[R, P]) -> Kind[P, R]:
        """Makes handler the handler for kind and returns the Kind that enqueues its jobs.

        P and R are the handler's payload annotation and return annotation (any
        type pydantic can validate and dump). The Kind is bound to this runner: its
        methods also work without a store, through the runner's store. Its jobs go
        to the ``default`` queue, or to the runner's first queue when it does not
        serve ``default``. It must be called before start, once per kind.

        Args:
            kind: The kind's name.
            handler: An ``async def`` or ``def`` taking ``(ctx, payload)``, its
                payload and return annotated.

        Returns:
            The kind, bound to the runner.

        Raises:
            TypeError: kind is a Kind (attach with ``@runner.handler(kind)``), or
                the handler is missing or lacks an annotation (naming the kind).
            ValueError: kind is empty or cannot be stored.
            RunnerError: The kind already has a handler, or the runner started.
        """
        where = f"register {kind!r}"
        if isinstance(kind, Kind):
            raise TypeError(
                f"{where}: register takes a kind's name; for a Kind, "
                f"attach the handler with @runner.handler(kind)"
            )
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"{where}: empty kind")
        if handler is None:
            raise TypeError(f"{where}: no handler")
        payload_type, result_type = annotated_types(where, handler)
        queue = "default" if "default" in self.queues else next(iter(self.queues))
        declared = Kind[P, R](kind, payload_type, result_type, queue=queue)
        self._handlers.attach(where, declared, handler)
        return declared._bind(self.store, self.max_payload_bytes)

    @property
    def retention(self) -> datetime.timedelta | None:
        """How long finished jobs are kept; None keeps them forever."""
        return self._settings.retention

    @property
    def cancel_grace(self) -> float:
        """Seconds a cancelled handler gets to end before the runner gives up on it (see stop)."""
        return self._settings.cancel_grace

    @property
    def block_warning(self) -> float | None:
        """Seconds an async handler may block the event loop before a warning names its job."""
        return self._settings.block_warning

    @property
    def only_kinds(self) -> bool:
        """Whether the runner claims only the kinds it has handlers for (otherwise fails others)."""
        return self._settings.only_kinds

    @property
    def retry_backoff(self) -> WriteBackoff:
        """The wait between retries of a failed claim or outcome write (0.05 s doubling to 5 s)."""
        return self._settings.retry_backoff

    @property
    def give_up_after(self) -> int:
        """How many tries an outcome write gets once stop has begun; its jobs then stay running."""
        return self._settings.give_up_after

    @property
    def kinds(self) -> Sequence[str]:
        """The kinds that have a handler, sorted."""
        return self._handlers.kinds()

    def get(self, job_id: str) -> Job:
        """Returns the job with id (see ``Store.get``).

        Args:
            job_id: The job's id.

        Returns:
            The job, its result as plain JSON data.

        Raises:
            JobNotFound: No job has the id.
            TypeError: job_id is not a str.
        """
        return self.store.get(job_id)

    async def aget(self, job_id: str) -> Job:
        """The async form of get."""
        return await self.store.aget(job_id)

    def notify_enqueued(self) -> None:
        """Wakes an idle worker to look for a new job; safe from any thread.

        Every enqueue through the runner's store calls it; it does nothing while
        the runner is not running, and only pokes the claimers while none waits.
        """
        self._pool.notify_enqueued()

    async def start(self) -> None:
        """Interrupts the jobs that dead runners left running, then starts the workers.

        Jobs of an earlier runner of this name, of runners whose lease expired and
        of runners of this host whose process is gone are interrupted, the count
        logged as a warning; the store, the queues and the kinds the runner serves
        are logged, and a warning for each of its queues that is paused. The
        workers run on the calling event loop until stop; wait waits for them.

        Raises:
            RunnerError: The runner has no handler (it would fail every job it
                claims), it started already, or it was stopped (even before any
                start).
        """
        if self._stop.is_set():
            raise RunnerError(
                "start: the runner was stopped; a stopped runner never starts again, "
                "make a new Runner"
            )
        if not self._handlers.kinds():
            raise RunnerError(
                "start: the runner has no handler, so it would fail every job it claims with "
                "'no handler for job kind'; attach handlers (@runner.handler(kind) or "
                "runner.register) before start, e.g. import the module that defines them"
            )
        if not self._handlers.close():
            raise RunnerError("start: runner already started")
        try:
            await self._maintenance.begin()
            if self.flow:
                await self.store.adeclare(self.flow)
            paused = await self.store.engine.aread(PausedQueues(tuple(self.queues)))
        except BaseException:
            self._handlers.reopen()
            raise
        loop = asyncio.get_running_loop()
        self._loop = loop
        if self._stop.is_set():
            self._stop.reach_loop()
        self._pool.start(loop, self.queues, self._handlers.kinds() if self.only_kinds else None)
        self._tasks = []
        self._tasks.append(loop.create_task(self._maintenance.run(), name="jobtable-maintenance"))
        self._tasks.append(loop.create_task(self._cancel_watch.run(), name="jobtable-cancels"))
        self._periodic.begin(self.kinds, self.queues)
        self._tasks.append(loop.create_task(self._periodic.run(), name="jobtable-periodic"))
        self._unwatch = self.store._watch_enqueues(self.notify_enqueued)
        self._unlisten = self.store.engine.listen(
            self.notify_enqueued, self._cancel_watch.notify, self._pool.notify_ready
        )
        if self.block_warning is not None:
            self._loop_watch = LoopWatch(self.logger, self.block_warning, self._executor.running)
            self._loop_watch.start(loop)
        self._log_started(paused)

    def _log_started(self, paused: list[str]) -> None:
        self.logger.info(
            "runner started: %s on %s; %s%s",
            self.name,
            self.store.location,
            self._handlers.describe(self.queues),
            "; claims only those kinds" if self.only_kinds else "",
            extra={"runner": self.name, "workers": self.workers},
        )
        for queue in paused:
            self.logger.warning(
                "queue %r is paused: no runner starts its jobs until it is resumed "
                "(jobtable queues resume %s, or store.resume)",
                queue,
                queue,
                extra={"runner": self.name, "queue": queue},
            )

    def stop(self) -> None:
        """Begins a graceful stop; safe from any thread and from signal handlers.

        Workers claim no more jobs. Running handlers see ctx.stopping and get
        grace_period seconds to finish, and their outcome is recorded. Then the
        jobs still running are recorded interrupted (retried while attempts
        remain, else failed with MESSAGE_INTERRUPTED) and their handlers are
        cancelled; one that ignores that for cancel_grace seconds is given up
        on, its worker freed. It does not wait: wait does.
        """
        self._stop.begin()
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._begin_stop)

    @property
    def stopping(self) -> bool:
        """True once stop was called."""
        return self._stop.is_set()

    def _begin_stop(self) -> None:
        self._stop.reach_loop()
        self._cancel_watch.poke()
        for producer in self._producers:
            producer.stop()
        self._executor.batches.flush()
        if self._grace_timer is None and self._loop is not None:
            self._grace_timer = self._loop.call_later(self.grace_period, self._pool.end_grace)

    async def wait(self) -> None:
        """Waits until every worker has stopped, then deregisters the runner.

        A worker whose handler ignores cancellation is not waited for once
        the runner gave up on it (see ``cancel_grace``); its job was recorded.
        """
        if not self._tasks:
            return
        await self._pool.wait()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._executor.abandon()
        await self._completer.drain()
        if self._grace_timer is not None:
            self._grace_timer.cancel()
        if self._loop_watch is not None:
            self._loop_watch.close()
            self._loop_watch = None
        for undo in (self._unwatch, self._unlisten):
            if undo is not None:
                undo()
        self._unwatch = self._unlisten = None
        self._executor.close()
        if not self._stopped:
            self._stopped = True
            try:
                await self.store.engine.awrite(DeleteRunner(self.name))
            except Exception:
                self.logger.exception("deregister runner", extra={"runner": self.name})

    def run(self) -> None:
        """Starts, stops gracefully on SIGINT or SIGTERM, and waits: what a worker process calls.

        A second signal ends the grace period at once; a third ends the process at
        once. The process is done within grace_period + cancel_grace + 5 seconds of
        the first signal whatever its handlers do: past that (an async handler
        blocks the event loop, say) a watchdog thread logs which handlers would not
        stop, records their jobs interrupted, and ends the process with
        ``os._exit(1)``.

        Raises:
            RunnerError: It is called in a running event loop (async code awaits
                ``start()`` and ``wait()`` instead), starting nothing; or as start
                raises it.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run_loop(self._run_until_signal(), self._executor.stuck)
            return
        raise RunnerError(
            "runner.run() blocks and cannot run inside a running event loop: in async code "
            "use `await runner.start()`, then `await runner.wait()` (after runner.stop())"
        )

    async def _run_until_signal(self) -> None:
        loop = asyncio.get_running_loop()
        guard = ProcessGuard(
            self.logger,
            grace_period=self.grace_period,
            cancel_grace=self.cancel_grace,
            stop=self.stop,
            end_grace=functools.partial(loop.call_soon_threadsafe, self._pool.end_grace),
            last_words=lambda: self._pool.last_words(LAST_WRITE),
        )
        with guard:
            await self.start()
            await self.wait()
        self.logger.info("runner stopped", extra={"runner": self.name})

    async def run_next(self) -> str | None:
        """Claims the next ready job and runs it to completion in the calling task.

        The job is the first ready one of the runner's queues, in their order. It
        claims, runs and records through the same producer, executor and completer
        as the workers, and returns once the outcome is stored; tests use it to run
        jobs one at a time, deterministically, without starting the runner.

        Returns:
            The job's id, or None when no job is ready.
        """
        kinds = self._handlers.kinds() if self.only_kinds else None
        return await self._pool.run_next(kinds)
