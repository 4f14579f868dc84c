"""The executor: runs one attempt of a claimed job and decides its outcome.

It is the one place that decides what text is stored for a job: the
handler's typed result, a Failure's message, or a message of the runner's
own. Any other exception text is logged, never stored. It also decides
whether a failed attempt is retried: while attempts remain, after the
kind's retry backoff.
"""

import asyncio
import contextvars
import datetime
import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from jobtable._codec import Codec, PayloadMismatch, ResultTooLarge
from jobtable._engines.rows import ClaimedRow
from jobtable._errors import Failure, ResultError, Retry, SecretKeyError
from jobtable._job import (
    MESSAGE_INTERNAL,
    MESSAGE_INTERRUPTED,
    MESSAGE_PAYLOAD_MISMATCH,
    MESSAGE_TIMED_OUT,
)
from jobtable._options import DEFAULT_RETRY, RetryPolicy
from jobtable._runner.attempt import (
    CANCELLED,
    INTERRUPTED,
    WHAT_ENDED,
    Attempt,
    Publisher,
    printable,
    undecodable_text,
)
from jobtable._runner.context import JobContext, JobLabels
from jobtable._runner.daemon_pool import DaemonPool
from jobtable._runner.handler import AsyncHandler, Batches, BatchJob, Handler, Handlers, SyncHandler
from jobtable._runner.hooks import AttemptOutcome
from jobtable._runner.missing_keys import MissingKeys
from jobtable._runner.run_operations import Finish
from jobtable._runner.shared import JobLogger, Shared
from jobtable._runner.suspend import Suspended
from jobtable._telemetry import run_trace
from jobtable._values import storable, timestamp
from jobtable._workflow import FanOut

P = TypeVar("P")
R = TypeVar("R")

_JOB_FAILED = "job failed"
"""What is logged when a handler raised; a retried attempt says so instead."""

GaveUp = Callable[["asyncio.Task[Any]", str, "Finish | None"], None]
"""What the executor calls when it gives up on an attempt whose handler would not end:
the attempt's task, its queue, and the outcome to record for it (None: recorded already)."""


class Executor:
    """Runs claimed jobs with their kinds' handlers and returns their outcomes.

    Plain ``def`` handlers run on daemon threads of its own once started
    (``DaemonPool``), so that they never block the event loop nor hold the
    process open at exit; before that, on the loop's default executor.
    ``cancel`` ends a running attempt early, for a cancel request; a handler
    that ignores such an end for the cancel grace is given up on. Partial
    results go through a ``Publisher``. A result over max_result_bytes is
    refused.
    """

    def __init__(self, shared: Shared, handlers: Handlers) -> None:
        self._store = shared.store
        self._handlers = handlers
        self._logger = shared.logger
        self._stop = shared.stop
        self._publisher = Publisher(shared)
        self.batches = Batches(shared.stop)
        """Gathers the jobs of batch kinds into their handlers' calls."""
        self._max_result_bytes = shared.settings.max_result_bytes
        self._cancel_grace = shared.settings.cancel_grace
        self._threads: DaemonPool | None = None
        self._attempts: dict[str, Attempt[Any]] = {}
        self.missing_keys = MissingKeys(shared.logger)
        self._on_give_up: GaveUp | None = None
        # The tasks of the attempts given up on whose handler has not ended yet.
        self._given_up: set[asyncio.Task[Any]] = set()

    def start(self, threads: int, name: str, on_give_up: GaveUp) -> None:
        """Opens the threads plain ``def`` handlers run on; on_give_up frees a stuck worker.

        Twice as many as the workers: a thread whose attempt timed out or was
        cancelled runs on until its handler returns, while its worker moves on.
        """
        self._threads = DaemonPool(2 * threads, thread_name_prefix=name)
        self._publisher.threads = self._threads
        self.batches.threads = self._threads
        self._on_give_up = on_give_up

    def abandon(self) -> None:
        """Gives up on the handlers still running: from now on their publishes raise NotRunning.

        Their jobs are recorded interrupted, and a late write must not make
        them look alive.
        """
        self._publisher.abandoned = True

    def close(self) -> None:
        """Lets go of the threads; a handler still running in one finishes unobserved.

        A context that outlives its runner still publishes (and is refused with
        NotRunning): with no threads of its own, its write runs on the loop's.
        """
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
            self._publisher.threads = None
            self.batches.threads = None

    def busy(self) -> bool:
        """True while any attempt runs."""
        return bool(self._attempts)

    def running(self) -> list[tuple[ClaimedRow, "asyncio.Task[Any]"]]:
        """The attempts under way, given up on or not, with their tasks; safe from any thread."""
        while True:
            try:
                return [(a.job, a.task) for a in self._attempts.values()]
            except RuntimeError:  # changed size as the loop thread went on: read again
                continue

    def interrupt(self) -> tuple[list[Finish], set["asyncio.Task[Any]"]]:
        """Ends every attempt still running: the grace period is over. Call it on the loop.

        Returns the outcomes to record at once, each job interrupted as a
        restart would (another attempt while attempts remain, otherwise
        failed with MESSAGE_INTERRUPTED), and the tasks of every attempt under
        way. A handler that returns later is fenced off by its claim.
        """
        outcomes = []
        for running in list(self._attempts.values()):
            if running.end(INTERRUPTED):
                outcomes.append(self._interrupted(running.job))
        return outcomes, {running.task for running in self._attempts.values()} | self._given_up

    def stuck(self) -> frozenset["asyncio.Task[Any]"]:
        """The tasks of the attempts given up on whose handlers have not ended."""
        return frozenset(self._given_up)

    def given_up(self, task: "asyncio.Task[Any]") -> bool:
        """True, once, when the attempt task ran was given up on: the task must end."""
        if task in self._given_up:
            self._given_up.discard(task)
            return True
        return False

    def _give_up(self, running: "Attempt[Any]") -> None:
        """Gives up on an attempt whose handler ignored its end for the cancel grace."""
        job = running.job
        if self._attempts.get(job.id) is not running:
            return  # it ended meanwhile
        del self._attempts[job.id]
        self._given_up.add(running.task)
        why = running.why
        assert why is not None
        outcome = None if why == INTERRUPTED else self._early_outcome(running)
        JobLogger(self._logger, job.id, job.kind, job.attempt).error(
            "the handler did not end within %s s of %s: it ignores cancellation; %s, and its "
            "worker slot is freed (the handler may run on, its outcome fenced off)",
            self._cancel_grace,
            WHAT_ENDED[why],
            "the job was recorded interrupted" if outcome is None else "the job is recorded",
        )
        if self._on_give_up is not None:
            self._on_give_up(running.task, running.queue, outcome)

    def _early_outcome(self, running: "Attempt[Any]") -> Finish:
        """The outcome of an attempt that a cancel or its timeout ended."""
        job = running.job
        if running.why == CANCELLED:
            return Finish.cancelled(job)
        return self._failed(job, MESSAGE_TIMED_OUT, running.retry)

    def _interrupted(self, job: ClaimedRow) -> Finish:
        """The outcome of an attempt cut short by the end of the grace period."""
        if job.attempt >= job.max_attempts:
            return Finish.failed(job, MESSAGE_INTERRUPTED)
        return Finish.failed(job, MESSAGE_INTERRUPTED, self._after(datetime.timedelta(0)))

    def cancel(self, job_id: str, attempt: int) -> bool:
        """Ends the running attempt of job_id, if it is attempt: its job ends cancelled.

        An async handler is cancelled; a plain one sees ``ctx.cancelled``.
        Returns whether such an attempt was running here. Call it on the loop.
        """
        running = self._attempts.get(job_id)
        if running is None or running.attempt != attempt:
            return False
        return running.end(CANCELLED)

    async def run(self, job: ClaimedRow, queue: str) -> Finish | None:
        """Runs one attempt of a job claimed from queue and returns the outcome to store.

        Only the handler's typed result, a Failure's message or a message of
        the runner's own reaches the table; any other exception is logged.
        None means the job stays running: the handler raised after stop began.
        A row whose text cannot be read fails alone with MESSAGE_INTERNAL,
        finally: another attempt would read the same bytes. An instrumented
        store's telemetry observes the attempt and its outcome, stored with it.
        """
        with await run_trace(self._store, job, queue) as trace:
            outcome = await self._attempt(job, queue)
            trace.ended(None if outcome is None else outcome.outcome)
        outcome = outcome and outcome.traced(trace.traceparent)
        if hooks := self._handlers.hooks:
            await hooks.ended(self._logger, AttemptOutcome.of(job, outcome))
        return outcome

    def _unrunnable(self, job: ClaimedRow) -> Finish | None:
        """The outcome of a job no handler can run (its row unreadable, or no handler), or None."""
        # Text that is all ASCII holds no undecodable byte: the check is for the rest.
        if not (job.payload.isascii() and job.kind.isascii()):
            undecodable = undecodable_text(job)
            if undecodable is not None:
                # Nothing of the row is written back but the runner's own message.
                JobLogger(self._logger, job.id, printable(job.kind), job.attempt).error(
                    "job row cannot be read: %s", undecodable
                )
                return Finish.failed(job, MESSAGE_INTERNAL)
        if self._handlers.get(job.kind) is None:
            error = f"no handler for job kind {job.kind}"
            return self._failed(job, error, DEFAULT_RETRY, what=error)
        return None

    def _succeeded(self, job: ClaimedRow, codec: "Codec[Any, R]", result: R) -> Finish:
        """The outcome of a handler that returned result: stored, or failed when it cannot be.

        A result too large, or holding secrets with no key configured, fails
        the job with our message, finally: another attempt would return the
        same. Any other invalid result fails it with MESSAGE_INTERNAL.
        """
        try:
            keys = self._store.secret_keys
            encoded = codec.encode_result(result, self._max_result_bytes, keys)
        except (ResultTooLarge, SecretKeyError) as err:
            JobLogger(self._logger, job.id, job.kind, job.attempt).error("job failed: %s", err)
            return Finish.failed(job, str(err))
        except ResultError as err:
            # The cause may quote the value: logged, never stored.
            JobLogger(self._logger, job.id, job.kind, job.attempt).error("job failed", exc_info=err)
            return Finish.failed(job, MESSAGE_INTERNAL)
        return Finish.succeeded(job, encoded)

    def _succeeded_with_additions(
        self, job: ClaimedRow, handler: Handler[Any, R], running: Attempt[R], result: R
    ) -> Finish | None:
        """The success of result, with the jobs the handler added to its workflow.

        The jobs result feeds are made with it now; one that cannot be (a
        key, a hook or its payload refuses it) fails the attempt as an error
        of the handler would, and then none of its additions is stored.
        """
        finish = self._succeeded(job, handler.codec, result)
        try:
            if isinstance(running.adds, FanOut) and finish.outcome.state == "succeeded":
                running.adds.feed(result)
        except Exception as err:
            return self._raised(job, err, handler.retry)
        return finish._replace(adds=running.adds)

    async def _attempt(self, job: ClaimedRow, queue: str) -> Finish | None:
        unrunnable = self._unrunnable(job)
        handler = self._handlers.get(job.kind)
        if unrunnable is not None or handler is None:
            return unrunnable
        task = asyncio.current_task()
        assert task is not None
        running = Attempt(
            job,
            queue,
            handler.codec,
            handler.retry,
            task,
            self._publisher,
            (self._cancel_grace, self._give_up),
        )
        self._attempts[job.id] = running
        running.arm(job.timeout)
        ours = False
        try:
            try:
                result = await self._call(handler, job, running)
            finally:
                if self._attempts.get(job.id) is running:
                    del self._attempts[job.id]
                ours = running.settle()
        except Suspended as suspended:
            return Finish.suspended(job, suspended.run_at)
        except SecretKeyError as err:
            put_back = self.missing_keys.put_back(job, err, self._store.clock())
            return put_back or self._failed(job, str(err), handler.retry, what=str(err))
        except asyncio.CancelledError as err:
            logger = JobLogger(self._logger, job.id, job.kind, job.attempt)
            if ours:
                if running.why == CANCELLED:
                    logger.warning("job cancelled on request")
                    return Finish.cancelled(job)
                what = f"job timed out after {job.timeout} s"
                return self._failed(job, MESSAGE_TIMED_OUT, handler.retry, what=what)
            if running.why == INTERRUPTED:
                logger.warning(
                    "job cancelled by the stop (grace period over or a second signal); "
                    "recorded interrupted"
                )
                raise
            if task.cancelling():
                logger.warning("job cancelled by shutdown; it is interrupted at the next start")
                raise
            # Nobody cancelled the worker: the handler awaited something that
            # was cancelled. That is the handler's failure, not a shutdown.
            return self._raised(job, err, handler.retry)
        except Exception as err:
            return self._raised(job, err, handler.retry)
        if running.why == INTERRUPTED:
            JobLogger(self._logger, job.id, job.kind, job.attempt).warning(
                "the handler returned after the end of the grace period; its job was recorded "
                "interrupted, and the result is dropped"
            )
            return None
        return self._succeeded_with_additions(job, handler, running, result)

    def _failed(
        self,
        job: ClaimedRow,
        error: str,
        retry: RetryPolicy,
        *,
        what: str | None = None,
        exc_info: BaseException | None = None,
    ) -> Finish:
        """The attempt failed with error: retried after retry's wait while attempts remain.

        what, when given, is logged as an error with exc_info: as it is for
        the last attempt, and for one that is retried as "attempt 1/3
        failed, retrying in 2 s" after it ("job failed" itself is left out).
        """
        logger = JobLogger(self._logger, job.id, job.kind, job.attempt)
        if job.attempt >= job.max_attempts:
            if what is not None:
                logger.error("%s", what, exc_info=exc_info)
            return Finish.failed(job, error)
        try:
            wait = retry(job.attempt)
            if not isinstance(wait, datetime.timedelta) or wait < datetime.timedelta(0):
                raise TypeError(f"want a timedelta of 0 or more, got {wait!r}")
        except Exception:
            logger.exception("the kind's retry policy failed; using the default backoff")
            wait = DEFAULT_RETRY(job.attempt)
        if what is not None:
            cause = "" if what == _JOB_FAILED else f"{what}; "
            logger.error(
                "%sattempt %d/%d failed, retrying in %s s",
                cause,
                job.attempt,
                job.max_attempts,
                f"{round(wait.total_seconds(), 3):g}",
                exc_info=exc_info,
            )
        return Finish.failed(job, error, self._after(wait))

    def _after(self, wait: datetime.timedelta) -> str:
        """The stored time wait from now; the last moment of year 9999 for a wait past it."""
        try:
            return timestamp(self._store.clock() + wait)
        except OverflowError:
            return timestamp(datetime.datetime.max.replace(tzinfo=datetime.UTC))

    def _raised(self, job: ClaimedRow, err: BaseException, retry: RetryPolicy) -> Finish | None:
        """The outcome of a handler that raised err.

        After stop began, None: the job stays running and is interrupted at
        the next start. Otherwise a Retry's later attempt, a Failure's message
        (final), MESSAGE_PAYLOAD_MISMATCH (final) for a stored payload that
        no longer validates, or MESSAGE_INTERNAL with err logged, never stored.
        """
        logger = JobLogger(self._logger, job.id, job.kind, job.attempt)
        if isinstance(err, PayloadMismatch):
            # Raised before the handler ran, and the same at every attempt.
            logger.error("job failed: %s", MESSAGE_PAYLOAD_MISMATCH, exc_info=err)
            return Finish.failed(job, MESSAGE_PAYLOAD_MISMATCH)
        if self._stop.is_set():
            logger.warning(
                "job interrupted by shutdown; it is interrupted at the next start", exc_info=err
            )
            return None
        if isinstance(err, Retry):
            return Finish.snoozed(job, self._after(err.after))
        if isinstance(err, Failure):
            return Finish.failed(job, storable(str(err.message)))
        return self._failed(job, MESSAGE_INTERNAL, retry, what=_JOB_FAILED, exc_info=err)

    async def _call(self, handler: Handler[P, R], job: ClaimedRow, running: Attempt[R]) -> R:
        """Decodes the payload, calls the handler inside the attempt hooks, returns its result."""
        payload = handler.codec.decode_payload(job.payload, self._store.secret_keys)
        hooks = self._handlers.hooks
        labels = await JobLabels.read(self._store, job.id, handler.labels, eager=bool(hooks))
        ctx: JobContext[R] = JobContext(
            id=job.id, kind=job.kind, attempt=job.attempt, stop=self._stop, running=running
        )
        ctx._labels, ctx._result_type = labels, handler.codec.result_type
        if job.workflow_id is not None:
            ctx._store, ctx.workflow_id = self._store, job.workflow_id
        if handler.batch is not None:
            batch = (handler.batch, handler.fn, handler.is_async)
            join = functools.partial(
                self.batches.join, job.kind, running.queue, batch, BatchJob(ctx, payload)
            )
            return cast(R, await hooks.around(ctx, join))
        if handler.is_async:
            fn = cast("AsyncHandler[R, P]", handler.fn)
            return cast(R, await hooks.around(ctx, functools.partial(fn, ctx, payload)))
        sync_fn = cast("SyncHandler[R, P]", handler.fn)
        loop = asyncio.get_running_loop()

        def in_thread() -> "asyncio.Future[R]":
            # Copied once the hooks entered: a plain handler sees the contextvars they set.
            call = functools.partial(contextvars.copy_context().run, sync_fn, ctx, payload)
            return loop.run_in_executor(self._threads, call)

        return cast(R, await hooks.around(ctx, in_thread))
