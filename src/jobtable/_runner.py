"""The runner: registered handlers and the pool of workers that runs their jobs."""

import asyncio
import contextlib
import contextvars
import datetime
import functools
import inspect
import logging
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, Generic, TypeVar, cast, overload

from ._context import JobContext
from ._daemon_pool import DaemonPool
from ._engine import ClaimedRow, Queries
from ._errors import Failure, NotRunning, ResultError, RunnerError, StoreError
from ._job import MESSAGE_INTERNAL, MESSAGE_INTERRUPTED, Job
from ._kind import Codec, GetJob, Kind, ResultTooLarge, job_from_row
from ._store import Store, now, storable, timestamp, unstorable

P = TypeVar("P")
R = TypeVar("R")
T = TypeVar("T")

AsyncHandler = Callable[[JobContext[R], P], Awaitable[R]]
"""An ``async def`` handler: it runs on the runner's event loop."""

SyncHandler = Callable[[JobContext[R], P], R]
"""A plain ``def`` handler: it runs in one of the runner's threads."""

_CLAIM_BACKOFF = (0.05, 5.0)  # first and largest wait after a failed claim, in seconds
_RECORD_TRIES = 8


class _JobLogger(logging.LoggerAdapter[logging.Logger]):
    """Adds the job's id and kind to every record as structured fields."""

    def process(
        self, msg: object, kwargs: MutableMapping[str, Any]
    ) -> tuple[object, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs


class _Handler(Generic[P, R]):
    """A registered handler with its codec: runs one job from stored JSON to stored JSON."""

    def __init__(
        self, fn: AsyncHandler[R, P] | SyncHandler[R, P], codec: Codec[P, R], is_async: bool
    ) -> None:
        self.fn = fn
        self.codec = codec
        self.is_async = is_async


def _handler_types(kind: str, handler: Callable[..., object]) -> tuple[type, type, bool]:
    """Returns the payload type, result type and asyncness of handler, from its annotations."""
    where = f"register {kind!r}"
    if not callable(handler):
        raise TypeError(f"{where}: handler is not callable")
    try:
        signature = inspect.signature(handler, eval_str=True)
    except (NameError, TypeError, ValueError) as err:
        raise TypeError(f"{where}: cannot read the handler's annotations: {err}") from err
    params = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) != 2:
        raise TypeError(
            f"{where}: the handler must take (ctx, payload), it takes {len(params)} arguments"
        )
    payload_type = params[1].annotation
    if payload_type is inspect.Parameter.empty:
        raise TypeError(
            f"{where}: the handler's payload parameter {params[1].name!r} has no type annotation"
        )
    result_type = signature.return_annotation
    if result_type is inspect.Signature.empty:
        raise TypeError(f"{where}: the handler has no return annotation")
    call = getattr(handler, "__call__", None)  # noqa: B004 (an async __call__ counts)
    is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)
    return payload_type, result_type, is_async


class Runner:
    """Owns the job handlers and the pool of workers that runs their jobs.

    A fixed pool of ``workers`` workers claims queued jobs oldest first. An
    enqueue in this process wakes an idle worker at once; jobs enqueued by
    other processes are found by polling every ``poll_interval`` seconds, or
    at once where the engine can notify (PostgreSQL). Runners sharing a
    database know each other by ``name`` and a heartbeat: a runner whose
    heartbeat is older than ``lease`` seconds is dead, and its running jobs
    are failed as interrupted. Finished jobs older than ``retention`` are
    deleted (None keeps them forever).
    """

    def __init__(
        self,
        store: Store,
        *,
        workers: int = 4,
        logger: logging.Logger | None = None,
        name: str | None = None,
        poll_interval: float = 1.0,
        lease: float = 30.0,
        grace_period: float = 10.0,
        retention: datetime.timedelta | None = datetime.timedelta(days=7),
        max_payload_bytes: int = 1 << 20,
        max_result_bytes: int = 1 << 20,
    ) -> None:
        if not isinstance(store, Store):
            raise TypeError(f"jobtable: Runner needs a Store, got {type(store).__name__}")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"jobtable: {workers!r} workers, want at least 1")
        if logger is not None and not isinstance(logger, logging.Logger):
            raise TypeError(f"jobtable: logger must be a logging.Logger, got {logger!r}")
        for label, value in (("poll_interval", poll_interval), ("lease", lease)):
            if not value > 0:
                raise ValueError(f"jobtable: {label} must be positive, got {value!r}")
        if grace_period < 0:
            raise ValueError(f"jobtable: grace_period must be 0 or more, got {grace_period!r}")
        for label, limit in (
            ("max_payload_bytes", max_payload_bytes),
            ("max_result_bytes", max_result_bytes),
        ):
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"jobtable: {label} must be a positive int, got {limit!r}")
        if retention is not None and retention < datetime.timedelta(0):
            raise ValueError(
                f"jobtable: retention must be 0 or more, or None (keep forever), got {retention!r}"
            )
        if name is not None:
            if not isinstance(name, str) or not name:
                raise ValueError(f"jobtable: a runner name must be a non-empty str, got {name!r}")
            if why := unstorable(name):
                raise ValueError(f"jobtable: runner name {name!r} cannot be stored: {why}")
        self.store = store
        """The store the runner's jobs live in."""
        self.workers = workers
        """How many jobs the runner runs at once."""
        self.logger = logger if logger is not None else logging.getLogger("jobtable")
        """Where the runner logs; records about a job carry its job_id and kind as fields."""
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        """Identifies this runner among the runners that share the database.

        A runner that starts fails at once the jobs an earlier runner of the
        same name left running, so each worker process needs its own name. The
        default, host name and process id, differs in every process (so
        ``uvicorn --workers N`` gets N names); a restarted process then gets a
        new name, and its predecessor's jobs are failed as interrupted once
        that runner's lease expires. A stable name given per process slot
        fails them at once on restart instead.
        """
        self.poll_interval = poll_interval
        """Seconds an idle runner waits before it looks for jobs enqueued elsewhere."""
        self.lease = lease
        """Seconds without a heartbeat after which a runner counts as dead."""
        self.grace_period = grace_period
        """Seconds running handlers get to finish after stop, before they are cancelled."""
        self.retention = retention
        """How long finished jobs are kept; None keeps them forever."""
        self.max_payload_bytes = max_payload_bytes
        """The largest encoded payload enqueue accepts."""
        self.max_result_bytes = max_result_bytes
        """The largest encoded result or partial result a handler may store.

        An oversized publish raises ResultTooLarge (a ResultError) at the call;
        an oversized final result fails the job with a message saying so.
        """
        self._handlers: dict[str, _Handler[Any, Any]] = {}
        self._lock = threading.Lock()
        self._started = False
        self._stopping = threading.Event()
        # asyncio's events and queues bind to the loop that first waits on them:
        # the runner's loop, once start or run_next runs.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._astopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._idle_changed = asyncio.Event()
        self._queue: asyncio.Queue[ClaimedRow | None] = asyncio.Queue()
        self._idle = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._running: set[asyncio.Task[None]] = set()
        # Outcomes wait here for the claimer's next claim, which stores them
        # in the same statement, or for the completer, which stores each batch
        # of them in one write.
        self._outcomes: list[_Finish] = []
        self._completer: asyncio.Task[None] | None = None
        # True while the claimer waits for a free slot: a worker that finishes
        # frees one, so its outcome can ride on the claim that follows.
        self._claimer_waits_for_slot = False
        # The jobs this runner claimed and has not recorded, by id: the
        # heartbeat fails a job running under this name that is not here.
        self._held: dict[str, int] = {}
        self._threads: DaemonPool | None = None
        self._unlisten: Callable[[], None] | None = None
        self._grace_timer: asyncio.TimerHandle | None = None
        self._stopped = False
        # Set once the runner gives up on the handlers still running (the
        # grace period ended): their publishes then raise NotRunning.
        self._abandoned = False

    def __repr__(self) -> str:
        return f"Runner(name={self.name!r}, workers={self.workers}, kinds={sorted(self._handlers)})"

    # Registration.

    @overload
    def register(self, kind: str, handler: AsyncHandler[R, P]) -> Kind[P, R]: ...

    @overload
    def register(self, kind: str, handler: SyncHandler[R, P]) -> Kind[P, R]: ...

    def register(self, kind: str, handler: AsyncHandler[R, P] | SyncHandler[R, P]) -> Kind[P, R]:
        """Makes handler the handler for kind and returns the Kind that enqueues its jobs.

        P and R are the handler's payload annotation and return annotation
        (any type pydantic can validate and dump). It must be called before
        start, once per kind; otherwise, and for an empty kind, a missing
        handler or a missing annotation, it raises an error naming the kind.
        """
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"register {kind!r}: empty kind")
        if why := unstorable(kind):
            raise ValueError(f"register {kind!r}: the kind name cannot be stored: {why}")
        if handler is None:
            raise TypeError(f"register {kind!r}: no handler")
        payload_type, result_type, is_async = _handler_types(kind, handler)
        try:
            codec = Codec[P, R](kind, payload_type, result_type)
        except Exception as err:
            raise TypeError(
                f"register {kind!r}: pydantic cannot validate and dump its types: {err}"
            ) from err
        with self._lock:
            if self._started:
                raise RunnerError(f"register {kind!r}: runner already started")
            if kind in self._handlers:
                raise RunnerError(f"register {kind!r}: kind already registered")
            self._handlers[kind] = _Handler(handler, codec, is_async)
        return Kind(self, codec)

    @property
    def kinds(self) -> Sequence[str]:
        """The registered kinds, sorted."""
        return sorted(self._handlers)

    # Reading jobs.

    def get(self, job_id: str) -> Job:
        """Returns the job with id; raises JobNotFound for an unknown id."""
        return job_from_row(self.store.engine.read(GetJob(job_id)))

    async def aget(self, job_id: str) -> Job:
        """The async form of get."""
        return job_from_row(await self.store.engine.aread(GetJob(job_id)))

    # Lifecycle.

    def notify_enqueued(self) -> None:
        """Wakes an idle worker to look for a new job; safe from any thread.

        Kind.enqueue calls it; it does nothing while the runner is not running.
        """
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._wake.set)

    async def start(self) -> None:
        """Fails the jobs that dead runners left running, then starts the workers.

        Jobs of an earlier runner of this name, and of runners whose heartbeat
        lease expired, are failed with MESSAGE_INTERRUPTED and the count is
        logged as a warning. The workers run on the calling event loop until
        stop; wait waits for them. A second start, and a start after stop
        (even a stop before any start), raise RunnerError.
        """
        with self._lock:
            if self._stopping.is_set():
                raise RunnerError(
                    "start: the runner was stopped; a stopped runner never starts again, "
                    "make a new Runner"
                )
            if self._started:
                raise RunnerError("start: runner already started")
            self._started = True
        try:
            await self.store.engine.awrite(self._begin)
        except BaseException:
            with self._lock:
                self._started = False
            raise
        loop = asyncio.get_running_loop()
        self._loop = loop
        if self._stopping.is_set():
            self._astopping.set()
        self._idle = self.workers
        self._threads = DaemonPool(self.workers, thread_name_prefix=f"jobtable-{self.name}")
        self._tasks = [loop.create_task(self._produce(), name="jobtable-claimer")]
        self._tasks += [
            loop.create_task(self._work(), name=f"jobtable-worker-{i}") for i in range(self.workers)
        ]
        self._tasks.append(loop.create_task(self._maintain(), name="jobtable-heartbeat"))
        self._unlisten = self.store.engine.listen(self.notify_enqueued)

    def _begin(self, q: Queries) -> None:
        stamp = now()
        cutoff = self._cutoff()
        previous = q.get_runner(name=self.name)
        if previous is not None and previous.heartbeat_at >= cutoff:
            self.logger.warning(
                "a runner named %r beat at %s, within its lease: if that process still runs, "
                "its jobs are now failed as interrupted; give each worker process its own name",
                self.name,
                previous.heartbeat_at,
                extra={"runner": self.name},
            )
        q.register_runner(name=self.name, now=stamp)
        own = q.fail_running_jobs(error=MESSAGE_INTERRUPTED, now=stamp, runner=self.name)
        dead = q.fail_jobs_of_dead_runners(error=MESSAGE_INTERRUPTED, now=stamp, cutoff=cutoff)
        q.delete_dead_runners(cutoff=cutoff)
        if own + dead:
            self.logger.warning(
                "failed %d jobs interrupted by restart",
                own + dead,
                extra={"count": own + dead, "runner": self.name},
            )

    def _cutoff(self) -> str:
        return timestamp(
            datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=self.lease)
        )

    def stop(self) -> None:
        """Begins a graceful stop; safe from any thread and from signal handlers.

        Workers claim no more jobs. Running handlers see ctx.stopping and get
        grace_period seconds to finish, and their outcome is recorded; then the
        ones left are cancelled and their jobs stay running, so the next start
        fails them as interrupted. It does not wait: wait does.
        """
        self._stopping.set()
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._begin_stop)

    @property
    def stopping(self) -> bool:
        """True once stop was called."""
        return self._stopping.is_set()

    def _begin_stop(self) -> None:
        self._astopping.set()
        self._wake.set()
        self._idle_changed.set()
        if self._grace_timer is None and self._loop is not None:
            self._grace_timer = self._loop.call_later(self.grace_period, self._cancel_running)

    def _cancel_running(self) -> None:
        self._abandoned = True
        for task in self._running:
            task.cancel()

    async def wait(self) -> None:
        """Waits until every worker has stopped, then deregisters the runner."""
        if not self._tasks:
            return
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._abandoned = True
        while self._completer is not None and not self._completer.done():
            await asyncio.gather(self._completer, return_exceptions=True)
        if self._grace_timer is not None:
            self._grace_timer.cancel()
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
        if not self._stopped:
            self._stopped = True
            try:
                await self.store.engine.awrite(_DeleteRunner(self.name))
            except Exception:
                self.logger.exception("deregister runner", extra={"runner": self.name})

    def run(self) -> None:
        """Starts, stops gracefully on SIGINT or SIGTERM, and waits: what a worker process calls.

        A second signal cancels the handlers still running at once.
        """
        asyncio.run(self._run_until_signal())

    async def _run_until_signal(self) -> None:
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if self._stopping.is_set():
                self._cancel_running()
            self.stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            await self.start()
            self.logger.info("runner started", extra={"runner": self.name, "workers": self.workers})
            await self.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        self.logger.info("runner stopped", extra={"runner": self.name})

    # Claiming.

    async def _produce(self) -> None:
        """Claims jobs for idle workers until stop; the only place jobs are claimed."""
        backoff = _CLAIM_BACKOFF[0]
        while not self._stopping.is_set():
            if self._idle <= 0:
                self._idle_changed.clear()
                self._claimer_waits_for_slot = True
                try:
                    await self._idle_changed.wait()
                finally:
                    self._claimer_waits_for_slot = False
                continue
            self._wake.clear()
            wanted = self._idle
            # The outcomes of the jobs that freed the slots commit with the
            # claim that fills them: one statement, one commit.
            outcomes, self._outcomes = self._outcomes, []
            try:
                jobs = await self._claim(wanted, outcomes)
            except Exception:
                if outcomes:
                    # The completer retries them on their own.
                    self._outcomes[:0] = outcomes
                    self._complete_soon()
                self.logger.exception(
                    "claim jobs; retrying", extra={"runner": self.name, "backoff": backoff}
                )
                await self._wait_stop(backoff)
                backoff = min(backoff * 2, _CLAIM_BACKOFF[1])
                continue
            backoff = _CLAIM_BACKOFF[0]
            for job in jobs:
                self._idle -= 1
                self._queue.put_nowait(job)
            if len(jobs) < wanted:
                self._complete_soon()
                await self._wait_wake()
        self._complete_soon()
        for _ in range(self.workers):
            self._queue.put_nowait(None)

    async def _claim(
        self, max_jobs: int, outcomes: "list[_Finish] | None" = None
    ) -> Sequence[ClaimedRow]:
        """Stores outcomes and claims up to max_jobs jobs, in one write.

        Returns the claimed jobs, oldest first.
        """
        done = outcomes or []
        changed, rows = await self.store.engine.awrite(_FinishAndClaim(done, self.name, max_jobs))
        for row in rows:
            self._held[row.id] = row.attempt
        if done:
            self._recorded(done, changed)
        return sorted(rows, key=lambda row: row.seq)

    async def _wait_wake(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), self.poll_interval)

    async def _wait_stop(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._astopping.wait(), seconds)

    async def run_next(self) -> str | None:
        """Claims the oldest queued job and runs it to completion in the calling task.

        Returns the job's id, or None when no job is queued. It uses the same
        claim, run and record as the workers, and returns once the outcome is
        stored; tests use it to run jobs one at a time, deterministically,
        without starting the runner.
        """
        if self._stopping.is_set():
            self._astopping.set()
        jobs = await self._claim(1)
        if not jobs:
            return None
        outcome = await self._run(jobs[0])
        if outcome is not None:
            await self._record([outcome])
        self._held.pop(jobs[0].id, None)
        return jobs[0].id

    # Running.

    async def _work(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        while True:
            job = await self._queue.get()
            if job is None:
                return
            self._running.add(task)
            try:
                outcome = await self._run(job)
            except asyncio.CancelledError:
                if not self._stopping.is_set():
                    raise
                # The grace period ran out: the job stays running and fails at the next start.
                return
            finally:
                self._running.discard(task)
            if outcome is None:
                self._held.pop(job.id, None)
            else:
                self._complete_later(outcome)
            self._idle += 1
            self._idle_changed.set()

    async def _run(self, job: ClaimedRow) -> "_Finish | None":
        """Runs a claimed job and returns the outcome to store; the one place that decides it.

        Only the handler's typed result, a Failure's message or a message of
        the runner's own reaches the table; any other exception is logged.
        None means the job stays running: the handler raised after stop began.
        """
        handler = self._handlers.get(job.kind)
        if handler is None:
            self._job_logger(job.id, job.kind).error("no handler for job kind")
            return _Finish(job, error=f"no handler for job kind {job.kind}")
        try:
            result = await self._call(handler, job)
        except asyncio.CancelledError as err:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                self._job_logger(job.id, job.kind).warning(
                    "job cancelled by shutdown; it fails at the next start"
                )
                raise
            # Nobody cancelled the worker: the handler awaited something that
            # was cancelled. That is the handler's failure, not a shutdown.
            return self._raised(job, err)
        except Exception as err:
            return self._raised(job, err)
        try:
            return _Finish(job, result=handler.codec.encode_result(result, self.max_result_bytes))
        except ResultTooLarge as err:
            self._job_logger(job.id, job.kind).error("job failed: %s", err)
            return _Finish(job, error=str(err))
        except ResultError as err:
            # The cause may quote the value: logged, never stored.
            self._job_logger(job.id, job.kind).error("job failed", exc_info=err)
            return _Finish(job, error=MESSAGE_INTERNAL)

    def _raised(self, job: ClaimedRow, err: BaseException) -> "_Finish | None":
        """The outcome of a handler that raised err.

        After stop began, None: the job stays running and fails at the next
        start. Otherwise a Failure's message, or MESSAGE_INTERNAL with err
        logged, never stored.
        """
        logger = self._job_logger(job.id, job.kind)
        if self._stopping.is_set():
            logger.warning("job interrupted by shutdown; it fails at the next start", exc_info=err)
            return None
        if isinstance(err, Failure):
            return _Finish(job, error=storable(str(err.message)))
        logger.error("job failed", exc_info=err)
        return _Finish(job, error=MESSAGE_INTERNAL)

    async def _call(self, handler: _Handler[P, R], job: ClaimedRow) -> R:
        """Decodes the payload, calls the handler and returns what it returned."""
        codec = handler.codec
        payload = codec.decode_payload(job.payload)
        engine = self.store.engine

        def publish_op(partial: R) -> "_Publish":
            if self._abandoned:
                # The runner stopped waiting for this handler (its grace
                # period ended): the job is left running for the next start,
                # and a late write must not make it look alive.
                raise NotRunning(
                    f"publish result: job {job.id} was left running when the runner stopped"
                )
            encoded = codec.encode_result(partial, self.max_result_bytes)
            return _Publish(job.id, job.attempt, encoded)

        def publish(partial: R) -> None:
            engine.write(publish_op(partial))

        async def apublish(partial: R) -> None:
            await engine.awrite(publish_op(partial))

        ctx: JobContext[R] = JobContext(
            id=job.id,
            kind=job.kind,
            attempt=job.attempt,
            stopping=self._stopping,
            astopping=self._astopping,
            publish=publish,
            apublish=apublish,
        )
        if handler.is_async:
            fn = cast("AsyncHandler[R, P]", handler.fn)
            result = await fn(ctx, payload)
        else:
            sync_fn = cast("SyncHandler[R, P]", handler.fn)
            loop = asyncio.get_running_loop()
            call = functools.partial(contextvars.copy_context().run, sync_fn, ctx, payload)
            result = await loop.run_in_executor(self._threads, call)
        return result

    def _job_logger(self, job_id: str, kind: str) -> _JobLogger:
        """The runner's logger with the job's id and kind as structured fields."""
        return _JobLogger(self.logger, {"job_id": job_id, "kind": kind})

    def _complete_later(self, outcome: "_Finish") -> None:
        """Queues a job's outcome to be stored; the worker moves on at once.

        When the claimer waits for a free slot, the worker's own slot wakes
        it, and the outcome commits in the claim's statement. Otherwise the
        completer stores it at once, with the outcomes of the other workers
        that finished meanwhile (group commit). wait waits for either.
        """
        self._outcomes.append(outcome)
        if not self._claimer_waits_for_slot:
            self._complete_soon()

    def _complete_soon(self) -> None:
        """Starts the completer, unless it is running or no outcome waits."""
        if self._outcomes and (self._completer is None or self._completer.done()):
            self._completer = asyncio.create_task(self._complete(), name="jobtable-completer")

    async def _complete(self) -> None:
        while self._outcomes:
            batch, self._outcomes = self._outcomes, []
            await self._record(batch)

    async def _record(self, outcomes: "list[_Finish]") -> None:
        """Stores jobs' outcomes in one write, retrying a database error with capped backoff.

        It retries a transient error (StoreError.transient: a lost
        connection, a lock) until the write lands: while this runner lives it
        keeps its lease, so no other runner would ever fail the jobs, and
        giving up would leave them running forever. An outcome the database
        refuses for good (a data or constraint error) is replaced once by
        MESSAGE_INTERNAL, the cause logged; if even that is refused, the job
        is failed as interrupted once its claim is older than the lease.
        Only once stop has begun does it give up on a transient error after
        _RECORD_TRIES tries; the jobs then stay running and the
        next start fails them as interrupted. Each write is fenced by its
        claim: a job that is no longer running under its claim is left as it
        is, and that is logged.
        """
        changed = None
        try:
            changed = await self._store_outcomes(outcomes)
        finally:
            self._recorded(outcomes, changed)

    def _recorded(self, outcomes: "list[_Finish]", changed: Sequence[str] | None) -> None:
        """Forgets the outcomes' jobs, logging each one whose claim no longer held.

        changed holds the ids of the jobs the outcomes finished; None (given
        up, or not stored) logs nothing more.
        """
        stored = None if changed is None else set(changed)
        for outcome in outcomes:
            self._held.pop(outcome.job_id, None)
            if stored is not None and outcome.job_id not in stored:
                self._job_logger(outcome.job_id, outcome.kind).error(
                    "record job outcome: job is not running under this claim"
                )

    async def _store_outcomes(self, outcomes: "list[_Finish]") -> list[str] | None:
        """Returns the ids of the jobs the outcomes finished, or None when it gave up."""
        delay = _CLAIM_BACKOFF[0]
        tries = 0
        while True:
            try:
                changed, _ = await self.store.engine.awrite(_FinishAndClaim(outcomes, self.name, 0))
                return changed
            except Exception as err:
                if len(outcomes) > 1:
                    # One bad outcome must not hold the others back: each is
                    # retried on its own.
                    ids: list[str] = []
                    for outcome in outcomes:
                        alone = await self._store_outcomes([outcome])
                        # One given up was logged already; counting it as
                        # stored keeps it from being logged again as fenced off.
                        ids += [outcome.job_id] if alone is None else alone
                    return ids
                tries += 1
                extra = {"jobs": [o.job_id for o in outcomes], "runner": self.name}
                if not (isinstance(err, StoreError) and err.transient):
                    # The database refused this outcome itself (a data or
                    # constraint error): the same write would fail for ever.
                    [outcome] = outcomes
                    if outcome.error == MESSAGE_INTERNAL:
                        self.logger.exception(
                            "record job outcome: the database refused it; giving up, the job "
                            "fails as interrupted once its claim is older than the lease",
                            extra=extra,
                        )
                        return None
                    self._job_logger(outcome.job_id, outcome.kind).error(
                        "record job outcome: the database refused it; failing the job with "
                        "the internal message",
                        exc_info=True,
                    )
                    outcomes = [outcome.refused()]
                    continue
                if tries >= _RECORD_TRIES and self._stopping.is_set():
                    self.logger.exception(
                        "record job outcomes; giving up as the runner stops, the jobs stay "
                        "running and fail at the next start",
                        extra=extra,
                    )
                    return None
                self.logger.warning("record job outcomes; retrying", exc_info=True, extra=extra)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _CLAIM_BACKOFF[1])

    # Heartbeat, crash recovery and retention.

    async def _maintain(self) -> None:
        """Renews this runner's lease, fails dead runners' jobs and prunes old ones, until stop."""
        interval = self.lease / 3
        while not self._stopping.is_set():
            await self._wait_stop(interval)
            if self._stopping.is_set():
                return
            try:
                await self.store.engine.awrite(
                    functools.partial(self._maintenance, frozenset(self._held))
                )
            except Exception:
                self.logger.exception("runner heartbeat", extra={"runner": self.name})

    def _maintenance(self, held: frozenset[str], q: Queries) -> None:
        stamp = now()
        if not q.heartbeat_runner(now=stamp, name=self.name):
            self.logger.warning(
                "runner lost its lease; registering again", extra={"runner": self.name}
            )
            q.register_runner(name=self.name, now=stamp)
        cutoff = self._cutoff()
        dead = q.fail_jobs_of_dead_runners(error=MESSAGE_INTERRUPTED, now=stamp, cutoff=cutoff)
        q.delete_dead_runners(cutoff=cutoff)
        if dead:
            self.logger.warning(
                "failed %d jobs of dead runners as interrupted",
                dead,
                extra={"count": dead, "runner": self.name},
            )
        # A claim can commit while its reply is lost (a connection dropped at
        # COMMIT): the job runs under this name, but no worker has it. Once it
        # is older than the lease and still not held, it is failed as
        # interrupted, as a dead runner's job would be.
        lost = [
            row
            for row in q.list_running_jobs(runner=self.name, before=cutoff)
            if row.id not in held
        ]
        for row in lost:
            q.fail_job(error=MESSAGE_INTERRUPTED, now=stamp, id=row.id, attempt=row.attempt)
        if lost:
            self.logger.warning(
                "failed %d jobs this runner claimed but never received, as interrupted",
                len(lost),
                extra={"count": len(lost), "runner": self.name},
            )
        if self.retention is not None:
            before = timestamp(datetime.datetime.now(datetime.UTC) - self.retention)
            q.delete_finished_jobs(before=before, max_jobs=1000)


class _Publish:
    __slots__ = ("attempt", "job_id", "result")

    def __init__(self, job_id: str, attempt: int, result: str) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.result = result

    def __call__(self, q: Queries) -> None:
        changed = q.publish_job_result(
            result=self.result, now=now(), id=self.job_id, attempt=self.attempt
        )
        if changed != 1:
            raise NotRunning(f"publish result: job {self.job_id} is not running")


class _Finish:
    """A job's outcome: its result, or its error when error is set."""

    __slots__ = ("attempt", "error", "job_id", "kind", "result")

    def __init__(
        self, job: ClaimedRow, *, result: str | None = None, error: str | None = None
    ) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempt
        self.result = result
        self.error = error

    def refused(self) -> "_Finish":
        """The outcome that replaces this one when the database refused it: MESSAGE_INTERNAL."""
        finish = _Finish.__new__(_Finish)
        finish.job_id, finish.kind, finish.attempt = self.job_id, self.kind, self.attempt
        finish.result, finish.error = None, MESSAGE_INTERNAL
        return finish


class _FinishAndClaim:
    """The write that stores finished jobs' outcomes and claims up to max_jobs jobs.

    Returns the ids of the jobs it finished and the jobs it claimed.
    """

    __slots__ = ("max_jobs", "outcomes", "runner")
    one_statement = True

    def __init__(self, outcomes: list[_Finish], runner: str, max_jobs: int) -> None:
        self.outcomes = outcomes
        self.runner = runner
        self.max_jobs = max_jobs

    def __call__(self, q: Queries) -> tuple[list[str], Sequence[ClaimedRow]]:
        outcomes = self.outcomes
        return q.finish_and_claim_jobs(
            ids=[o.job_id for o in outcomes],
            attempts=[o.attempt for o in outcomes],
            results=[o.result for o in outcomes],
            errors=[o.error for o in outcomes],
            runner=self.runner,
            now=now(),
            max_jobs=self.max_jobs,
        )


class _DeleteRunner:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, q: Queries) -> None:
        q.delete_runner(name=self.name)
