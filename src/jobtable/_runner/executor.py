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
import time
from typing import Any, Generic, TypeVar, cast

from jobtable._codec import Codec, PayloadMismatch, ResultTooLarge
from jobtable._engines.rows import ClaimedRow
from jobtable._errors import (
    Failure,
    NotRunning,
    ResultError,
    Retry,
    SecretKeyError,
    StoreError,
)
from jobtable._job import MESSAGE_INTERNAL, MESSAGE_PAYLOAD_MISMATCH, MESSAGE_TIMED_OUT
from jobtable._options import DEFAULT_RETRY, RetryPolicy
from jobtable._runner.context import JobContext
from jobtable._runner.daemon_pool import DaemonPool
from jobtable._runner.handler import AsyncHandler, Handler, Handlers, SyncHandler
from jobtable._runner.hooks import AttemptOutcome
from jobtable._runner.job_labels import JobLabels
from jobtable._runner.job_logger import JobLogger
from jobtable._runner.operations import Finish, Publish
from jobtable._runner.shared import Shared
from jobtable._telemetry import run_trace
from jobtable._values import storable, timestamp

P = TypeVar("P")
R = TypeVar("R")

_TIMED_OUT = "timed out"
_CANCELLED = "cancelled"
"""Why an attempt ended early, without its handler."""


def _undecodable_text(job: ClaimedRow) -> str | None:
    """Says which text column of a claimed row is not valid text, or None when all are.

    An engine hands over bytes it could not decode as lone surrogates (the
    ``surrogateescape`` error handler), so such text does not encode back.
    """
    for column, text in (("kind", job.kind), ("payload", job.payload)):
        try:
            text.encode()
        except UnicodeEncodeError as err:
            return (
                f"its {column} is not valid UTF-8 at character {err.start}: {_printable(text)[:80]}"
            )
    return None


def _printable(text: str) -> str:
    """text with every byte that could not be decoded shown as an escape (\\xff)."""
    return text.encode(errors="surrogateescape").decode(errors="backslashreplace")


class _Attempt(Generic[R]):
    """An attempt under way: what its handler's context publishes through, and why it ended early.

    ended turns true when the attempt ends without its handler (a timeout or
    a cancel); a plain ``def`` handler reads it from its thread, through
    ``ctx.cancelled``. A bool is enough: nothing waits for it.
    """

    __slots__ = ("_codec", "_executor", "_job", "attempt", "cancelling", "ended", "task", "why")

    def __init__(
        self,
        executor: "Executor",
        job: ClaimedRow,
        codec: "Codec[Any, R]",
        task: "asyncio.Task[Any]",
    ) -> None:
        self._executor = executor
        self._job = job
        self._codec = codec
        self.attempt = job.attempt
        self.task = task
        # The task's cancel requests before the attempt began: those are not its.
        self.cancelling = task.cancelling()
        self.ended = False
        self.why: str | None = None  # _TIMED_OUT or _CANCELLED once it ended early

    def end(self, why: str) -> bool:
        """Ends the attempt early, for why: cancels its task; False when it ended already."""
        if self.why is not None:
            return False
        self.why = why
        self.ended = True
        self.task.cancel()
        return True

    def _publish_op(self, partial: R) -> Publish:
        executor, job = self._executor, self._job
        if executor._abandoned:
            # The runner stopped waiting for this handler (its grace period
            # ended): the job is left running for the next start, and a late
            # write must not make it look alive.
            raise NotRunning(
                f"publish result: job {job.id} was left running when the runner stopped"
            )
        store = executor._store
        encoded = self._codec.encode_result(partial, executor._max_result_bytes, store.secret_keys)
        return Publish(job, encoded, store.now())

    def publish(self, partial: R) -> None:
        """Stores partial as the job's result; blocks until stored (a plain handler's thread)."""
        self._executor._publish(self._publish_op(partial))

    async def apublish(self, partial: R) -> None:
        """Stores partial as the job's result, from the event loop."""
        op = self._publish_op(partial)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor._threads, self._executor._publish, op)


class Executor:
    """Runs claimed jobs with their kinds' handlers and returns their outcomes.

    Plain ``def`` handlers run on daemon threads of its own once started
    (``DaemonPool``), so that they never block the event loop nor hold the
    process open at exit; before that, on the loop's default executor.
    ``cancel`` ends a running attempt early, for a cancel request. A publish
    that meets a transient store error is retried after backoff for up to
    lease seconds, never once stop began. A result or partial result over
    max_result_bytes is refused.
    """

    def __init__(self, shared: Shared, handlers: Handlers) -> None:
        self._store = shared.store
        self._handlers = handlers
        self._logger = shared.logger
        self._lease = shared.settings.lease
        self._backoff = shared.settings.retry_backoff
        self._stop = shared.stop
        self._max_result_bytes = shared.settings.max_result_bytes
        self._threads: DaemonPool | None = None
        self._attempts: dict[str, _Attempt[Any]] = {}
        # Set once the runner gives up on the handlers still running (the
        # grace period ended): their publishes then raise NotRunning.
        self._abandoned = False

    def start(self, threads: int, name: str) -> None:
        """Opens the threads plain ``def`` handlers run on.

        Twice as many as the workers: a thread whose attempt timed out or was
        cancelled runs on until its handler returns, while its worker moves on.
        """
        self._threads = DaemonPool(2 * threads, thread_name_prefix=name)

    def abandon(self) -> None:
        """Gives up on the handlers still running: from now on their publishes raise NotRunning.

        Their jobs stay running for the next start to interrupt, and a late
        write must not make them look alive.
        """
        self._abandoned = True

    def close(self) -> None:
        """Lets go of the threads; a handler still running in one finishes unobserved.

        A context that outlives its runner still publishes (and is refused with
        NotRunning): with no threads of its own, its write runs on the loop's.
        """
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None

    def busy(self) -> bool:
        """True while any attempt runs."""
        return bool(self._attempts)

    def cancel(self, job_id: str, attempt: int) -> bool:
        """Ends the running attempt of job_id, if it is attempt: its job ends cancelled.

        An async handler is cancelled; a plain one sees ``ctx.cancelled``.
        Returns whether such an attempt was running here. Call it on the loop.
        """
        running = self._attempts.get(job_id)
        if running is None or running.attempt != attempt:
            return False
        return running.end(_CANCELLED)

    async def run(self, job: ClaimedRow, queue: str) -> Finish | None:
        """Runs one attempt of a job claimed from queue and returns the outcome to store.

        Only the handler's typed result, a Failure's message or a message of
        the runner's own reaches the table; any other exception is logged.
        None means the job stays running: the handler raised after stop began.
        A row whose text cannot be read fails alone with MESSAGE_INTERNAL,
        finally: another attempt would read the same bytes. An instrumented
        store's telemetry observes the attempt and its outcome.
        """
        with run_trace(self._store, job, queue) as trace:
            outcome = await self._attempt(job)
            trace.ended(None if outcome is None else outcome.outcome)
        if hooks := self._handlers.hooks:
            await hooks.ended(self._logger, AttemptOutcome.of(job, outcome))
        return outcome

    def _unrunnable(self, job: ClaimedRow) -> Finish | None:
        """The outcome of a job no handler can run (its row unreadable, or no handler), or None."""
        # Text that is all ASCII holds no undecodable byte: the check is for the rest.
        if not (job.payload.isascii() and job.kind.isascii()):
            undecodable = _undecodable_text(job)
            if undecodable is not None:
                # Nothing of the row is written back but the runner's own message.
                JobLogger(self._logger, job.id, _printable(job.kind)).error(
                    "job row cannot be read: %s", undecodable
                )
                return Finish.failed(job, MESSAGE_INTERNAL)
        if self._handlers.get(job.kind) is None:
            JobLogger(self._logger, job.id, job.kind).error("no handler for job kind")
            return self._failed(job, f"no handler for job kind {job.kind}", DEFAULT_RETRY)
        return None

    async def _attempt(self, job: ClaimedRow) -> Finish | None:
        unrunnable = self._unrunnable(job)
        handler = self._handlers.get(job.kind)
        if unrunnable is not None or handler is None:
            return unrunnable
        task = asyncio.current_task()
        assert task is not None
        running = _Attempt(self, job, handler.codec, task)
        self._attempts[job.id] = running
        # A timeout ends the attempt as a cancel does: through the task. With
        # none, an attempt costs no timer.
        timer = (
            None
            if job.timeout is None
            else asyncio.get_running_loop().call_later(job.timeout, running.end, _TIMED_OUT)
        )
        ours = False
        try:
            try:
                result = await self._call(handler, job, running)
            finally:
                if timer is not None:
                    timer.cancel()
                self._attempts.pop(job.id, None)
                # The task's cancel request was the attempt's own ending, not
                # a shutdown's, when no other request remains after it.
                ours = running.why is not None and task.uncancel() <= running.cancelling
        except SecretKeyError as err:
            # The payload's key is missing here, or differs: another runner,
            # or this one restarted with the key, can run it. The message
            # names the key id only, so it is stored.
            JobLogger(self._logger, job.id, job.kind).error("job failed: %s", err)
            return self._failed(job, str(err), handler.retry)
        except asyncio.CancelledError as err:
            if ours:
                logger = JobLogger(self._logger, job.id, job.kind)
                if running.why == _CANCELLED:
                    logger.warning("job cancelled on request")
                    return Finish.cancelled(job)
                logger.error("job timed out after %s s", job.timeout)
                return self._failed(job, MESSAGE_TIMED_OUT, handler.retry)
            if task.cancelling():
                JobLogger(self._logger, job.id, job.kind).warning(
                    "job cancelled by shutdown; it is interrupted at the next start"
                )
                raise
            # Nobody cancelled the worker: the handler awaited something that
            # was cancelled. That is the handler's failure, not a shutdown.
            return self._raised(job, err, handler.retry)
        except Exception as err:
            return self._raised(job, err, handler.retry)
        return self._succeeded(job, handler.codec, result)

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
            JobLogger(self._logger, job.id, job.kind).error("job failed: %s", err)
            return Finish.failed(job, str(err))
        except ResultError as err:
            # The cause may quote the value: logged, never stored.
            JobLogger(self._logger, job.id, job.kind).error("job failed", exc_info=err)
            return Finish.failed(job, MESSAGE_INTERNAL)
        return Finish.succeeded(job, encoded)

    def _failed(self, job: ClaimedRow, error: str, retry: RetryPolicy) -> Finish:
        """The attempt failed with error: retried after retry's wait while attempts remain."""
        if job.attempt >= job.max_attempts:
            return Finish.failed(job, error)
        try:
            wait = retry(job.attempt)
            if not isinstance(wait, datetime.timedelta) or wait < datetime.timedelta(0):
                raise TypeError(f"want a timedelta of 0 or more, got {wait!r}")
        except Exception:
            JobLogger(self._logger, job.id, job.kind).exception(
                "the kind's retry policy failed; using the default backoff"
            )
            wait = DEFAULT_RETRY(job.attempt)
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
        logger = JobLogger(self._logger, job.id, job.kind)
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
        logger.error("job failed", exc_info=err)
        return self._failed(job, MESSAGE_INTERNAL, retry)

    async def _call(self, handler: Handler[P, R], job: ClaimedRow, running: _Attempt[R]) -> R:
        """Decodes the payload, calls the handler inside the attempt hooks, returns its result."""
        payload = handler.codec.decode_payload(job.payload, self._store.secret_keys)
        hooks = self._handlers.hooks
        labels = await JobLabels.read(self._store, job.id, handler.labels, eager=bool(hooks))
        ctx: JobContext[R] = JobContext(
            id=job.id, kind=job.kind, attempt=job.attempt, stop=self._stop, running=running
        )
        ctx._labels = labels
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

    def _publish(self, op: Publish) -> None:
        """Stores a partial result; retries a transient store error with backoff for up to a lease.

        A publish is fenced by its claim and stores the same value again, so
        a retry is safe, and a dropped connection (a server restart) costs
        the handler a short wait instead of an exception that would fail its
        job. Unlike an outcome, it is not retried for ever: after a lease of
        failures, or once stop began, the StoreError reaches the handler, as
        a StoreError that is not transient does at once. NotRunning is never
        retried.
        """
        delay = self._backoff.first
        give_up_at = time.monotonic() + self._lease
        while True:
            try:
                self._store.engine.write(op)
                return
            except StoreError as err:
                if (
                    not err.transient
                    or self._stop.is_set()
                    or time.monotonic() + delay > give_up_at
                ):
                    raise
                JobLogger(self._logger, op.job_id, op.kind).warning(
                    "publish job result; retrying", exc_info=True
                )
            time.sleep(delay)
            delay = self._backoff.after(delay)
