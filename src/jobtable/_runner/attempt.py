"""An attempt under way: why it ended early, its publisher, and what a retry resumes from.

A step (``JobContext.step``) runs its function once per job: its output is
checked and encoded as a result is, and recorded in one transaction fenced
by the attempt's claim; a later attempt of the job reads the recorded
output back instead of running the function again (``Resume``). The first
attempt of a job has no earlier one to resume from, so it reads nothing.
"""

import asyncio
import concurrent.futures
import inspect
import time
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import pydantic

from jobtable._codec import Codec, StepCodec
from jobtable._engines.rows import ClaimedRow
from jobtable._errors import NotRunning, StepError, StoreError
from jobtable._operations import GetJob
from jobtable._options import RetryPolicy
from jobtable._runner.run_operations import Publish, ReadStep, RecordStep
from jobtable._runner.shared import Shared
from jobtable._runner.suspend import RESERVED_PREFIX, SuspendWait, Waiting
from jobtable._workflow import FanOut

R = TypeVar("R")

TIMED_OUT = "timed out"
CANCELLED = "cancelled"
INTERRUPTED = "interrupted"
"""Why an attempt ended early, without its handler."""

WHAT_ENDED = {
    TIMED_OUT: "its timeout",
    CANCELLED: "its cancel",
    INTERRUPTED: "the end of the grace period",
}
"""What ended an attempt early, as the log says it."""


def undecodable_text(job: ClaimedRow) -> str | None:
    """Says which text column of a claimed row is not valid text, or None when all are.

    An engine hands over bytes it could not decode as lone surrogates (the
    ``surrogateescape`` error handler), so such text does not encode back.
    """
    for column, text in (("kind", job.kind), ("payload", job.payload)):
        try:
            text.encode()
        except UnicodeEncodeError as err:
            return (
                f"its {column} is not valid UTF-8 at character {err.start}: {printable(text)[:80]}"
            )
    return None


def printable(text: str) -> str:
    """text with every byte that could not be decoded shown as an escape (\\xff)."""
    return text.encode(errors="surrogateescape").decode(errors="backslashreplace")


class Publisher:
    """Stores running jobs' partial results and steps for their handlers.

    A publish that meets a transient store error is retried after backoff
    for up to lease seconds, never once stop began. A partial result or a
    step's output over max_result_bytes is refused. Once abandoned (the
    grace period ended) every publish raises NotRunning.
    """

    def __init__(self, shared: Shared) -> None:
        self.store = shared.store
        """The store the runner writes to."""
        self._store = shared.store
        self._trouble = shared.trouble
        self.logger = shared.logger
        """The runner's logger."""
        self._lease = shared.settings.lease
        self._backoff = shared.settings.retry_backoff
        self._stop = shared.stop
        self.max_result_bytes = shared.settings.max_result_bytes
        """The largest encoded result or partial result."""
        self.threads: concurrent.futures.Executor | None = None
        """Where an async handler's publish waits for its write (None: the loop's default)."""
        self.abandoned = False
        """Set once the runner gives up on the handlers still running (the grace period ended)."""

    def check(self, job: ClaimedRow, what: str) -> None:
        """Raises NotRunning, saying what was refused, once abandoned."""
        if self.abandoned:
            # The runner stopped waiting for this handler (its grace period
            # ended): its job was recorded interrupted, and a late write must
            # not make it look alive.
            raise NotRunning(f"{what}: job {job.id} was interrupted when the runner stopped")

    def op(self, job: ClaimedRow, codec: "Codec[Any, R]", partial: R) -> Publish:
        """The write of partial as job's result; raises NotRunning once abandoned."""
        self.check(job, "publish result")
        store = self._store
        encoded = codec.encode_result(partial, self.max_result_bytes, store.secret_keys)
        return Publish(job, encoded, store.now())

    def publish(self, op: Publish | RecordStep | SuspendWait) -> None:
        """Stores a partial result or a step; retries a transient error with backoff for a lease.

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
            except StoreError as err:
                if (
                    not err.transient
                    or self._stop.is_set()
                    or time.monotonic() + delay > give_up_at
                ):
                    raise
                message = (
                    "record job step; retrying"
                    if isinstance(op, RecordStep)
                    else "record job wait; retrying"
                    if isinstance(op, SuspendWait)
                    else "publish job result; retrying"
                )
                job = {"job_id": op.job_id, "kind": op.kind, "attempt": op.attempt}
                self._trouble.failed(message, err, **job)
            else:
                self._trouble.landed()
                return
            time.sleep(delay)
            delay = self._backoff.after(delay)


_CODECS: dict[object, StepCodec[Any]] = {}
"""The codec of each step output type met, built once: a TypeAdapter costs milliseconds."""


def _label(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))


def step_codec(name: str, fn: Callable[..., object], returns: object) -> StepCodec[Any]:
    """The codec of step name's output: of returns when given, else of fn's return annotation.

    Raises TypeError, naming the step, when there is neither, or when the
    type is not one jobtable can store (pydantic cannot validate it).
    """
    output = returns
    if output is None:
        target = fn if inspect.isroutine(fn) else getattr(fn, "__call__", fn)  # noqa: B004
        try:
            hints = typing.get_type_hints(target, include_extras=True)
        except Exception as err:
            raise TypeError(
                f"step {name!r}: cannot read the return annotation of {_label(fn)}: {err}"
            ) from err
        if "return" not in hints:
            raise TypeError(
                f"step {name!r}: {_label(fn)} has no return annotation; annotate it, or pass "
                "returns= with the output's type"
            )
        output = hints["return"]
    try:
        return _CODECS[output]
    except KeyError:
        pass
    except TypeError:  # an unhashable type: built each time
        return _new_codec(name, output)
    codec = _CODECS[output] = _new_codec(name, output)
    return codec


def _new_codec(name: str, output: object) -> StepCodec[Any]:
    try:
        return StepCodec(output)
    except pydantic.PydanticSchemaGenerationError as err:
        raise TypeError(f"step {name!r}: its output type {output!r} cannot be stored") from err


class Resume(Generic[R]):
    """One attempt's steps and its job's last partial result, as its handler's context uses them.

    A step name is taken while its step runs and once it has an output: a
    second step of that name in the attempt raises StepError, while a step
    whose function raised leaves its name free and nothing recorded.
    """

    __slots__ = ("_codec", "_job", "_partial", "_publisher", "_taken", "_waiting")

    def __init__(self, job: ClaimedRow, codec: "Codec[Any, R]", publisher: Publisher) -> None:
        self._job = job
        self._codec = codec
        self._publisher = publisher
        self._taken: set[str] = set()
        self._waiting: Waiting | None = None
        # The last partial result, once read or published: (value,).
        self._partial: tuple[R | None] | None = None

    def published(self, partial: R) -> None:
        """Notes partial, which this attempt just stored, as the last partial result."""
        self._partial = (partial,)

    def last_partial(self) -> R | None:
        """The job's last partial result, read from the store at the first call (blocking)."""
        if self._partial is None:
            value = None
            if self._job.attempt > 1:
                stored = self._publisher.store.engine.read(GetJob(self._job.id)).result
                if stored is not None:
                    keys = self._publisher.store.secret_keys
                    value = self._codec.decode_result(stored, self._job.id, keys)
            self._partial = (value,)
        return self._partial[0]

    def waiting(self) -> Waiting:
        """The attempt's sleeps and waits (``jobtable._runner.suspend``), made at the first."""
        if self._waiting is None:
            self._waiting = Waiting(self._job, self._publisher, self._publisher.logger)
        return self._waiting

    def _take(self, name: str, fn: Callable[..., object], returns: object) -> StepCodec[Any]:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a step's name must be a non-empty str, got {name!r}")
        if name.startswith(RESERVED_PREFIX):
            raise ValueError(
                f"step {name!r}: names that begin with {RESERVED_PREFIX!r} are jobtable's own "
                "(its sleeps and waits); rename the step"
            )
        codec = step_codec(name, fn, returns)
        if name in self._taken:
            raise StepError(
                f"step {name!r} is used twice in attempt {self._job.attempt} of job "
                f"{self._job.id}: give each step of a handler a name of its own"
            )
        self._taken.add(name)
        return codec

    def _recorded(self, codec: StepCodec[Any], name: str, text: str | None) -> tuple[Any] | None:
        if text is None:
            return None
        return (codec.decode(name, self._job.id, text, self._publisher.store.secret_keys),)

    def _record(self, codec: StepCodec[Any], name: str, output: object) -> RecordStep:
        publisher = self._publisher
        publisher.check(self._job, f"record step {name!r}")
        store = publisher.store
        encoded = codec.encode(name, output, publisher.max_result_bytes, store.secret_keys)
        return RecordStep(self._job, name, encoded, store.now())

    async def step(
        self, name: str, fn: Callable[[Any], object], arg: object, returns: object
    ) -> Any:
        """Runs step name (fn(arg), awaited when it is awaitable) once per job; see the module."""
        codec = self._take(name, fn, returns)
        try:
            if self._job.attempt > 1:
                text = await self._publisher.store.engine.aread(ReadStep(self._job.id, name))
                if (recorded := self._recorded(codec, name, text)) is not None:
                    return recorded[0]
            output = fn(arg)
            if inspect.isawaitable(output):
                output = await output
            op = self._record(codec, name, output)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._publisher.threads, self._publisher.publish, op)
        except BaseException:
            self._taken.discard(name)
            raise
        return output

    def step_sync(
        self, name: str, fn: Callable[[Any], object], arg: object, returns: object
    ) -> Any:
        """Runs step name (fn(arg)) once per job from a plain handler's thread, blocking."""
        if inspect.iscoroutinefunction(fn):
            raise TypeError(
                f"step {name!r}: {_label(fn)} is async; a plain def handler's step_sync runs "
                "plain functions (an async def handler awaits ctx.step)"
            )
        codec = self._take(name, fn, returns)
        try:
            if self._job.attempt > 1:
                text = self._publisher.store.engine.read(ReadStep(self._job.id, name))
                if (recorded := self._recorded(codec, name, text)) is not None:
                    return recorded[0]
            output = fn(arg)
            self._publisher.publish(self._record(codec, name, output))
        except BaseException:
            self._taken.discard(name)
            raise
        return output


class Attempt(Generic[R]):
    """An attempt under way: what its handler's context publishes through, and why it ended early.

    ended turns true when the attempt ends without its handler (a timeout, a
    cancel, or the end of the grace period); a plain ``def`` handler reads it
    from its thread, through ``ctx.cancelled``. A bool is enough: nothing
    waits for it.
    """

    __slots__ = (
        "_codec",
        "_give_up",
        "_grace",
        "_publisher",
        "_resume",
        "adds",
        "attempt",
        "cancelling",
        "ended",
        "give_up_timer",
        "job",
        "queue",
        "retry",
        "task",
        "timer",
        "why",
    )

    def __init__(
        self,
        job: ClaimedRow,
        queue: str,
        codec: "Codec[Any, R]",
        retry: RetryPolicy,
        task: "asyncio.Task[Any]",
        publisher: Publisher,
        give_up: "tuple[float, Callable[[Attempt[Any]], None]]",
    ) -> None:
        self.job = job
        self.queue = queue
        self._codec = codec
        self.retry = retry
        self._publisher = publisher
        self._grace, self._give_up = give_up
        self.attempt = job.attempt
        self.task = task
        # The task's cancel requests before the attempt began: those are not its.
        self.cancelling = task.cancelling()
        self.ended = False
        self.why: str | None = None  # TIMED_OUT, CANCELLED or INTERRUPTED once it ended early
        # Fires when the handler ignores the end: the runner then gives up on it.
        self.give_up_timer: asyncio.TimerHandle | None = None
        self.timer: asyncio.TimerHandle | None = None  # the timeout's
        self._resume: Resume[R] | None = None  # made at the first step or publish
        # The jobs the handler added to its workflow, stored with its success only.
        self.adds: FanOut | None = None

    def arm(self, timeout: float | None) -> None:
        """Starts the attempt's timeout, if any: it ends the attempt as a cancel does.

        With none, an attempt costs no timer.
        """
        if timeout is not None:
            self.timer = asyncio.get_running_loop().call_later(timeout, self.end, TIMED_OUT)

    def settle(self) -> bool:
        """Stops the attempt's timers once its handler is done; True when the attempt ended it.

        That is, the task's cancel request was the attempt's own ending (a
        cancel or a timeout), not a shutdown's: no other request remains.
        """
        for timer in (self.timer, self.give_up_timer):
            if timer is not None:
                timer.cancel()
        return self.why in (CANCELLED, TIMED_OUT) and self.task.uncancel() <= self.cancelling

    def end(self, why: str) -> bool:
        """Ends the attempt early, for why: cancels its task; False when it ended already.

        The handler then has the cancel grace to end; after that the
        attempt is given up on (see ``Executor.given_up``).
        """
        if self.why is not None:
            return False
        self.why = why
        self.ended = True
        self.task.cancel()
        self.give_up_timer = asyncio.get_running_loop().call_later(self._grace, self._give_up, self)
        return True

    @property
    def resume(self) -> Resume[R]:
        """The attempt's steps and its job's last partial result, made at the first use."""
        if self._resume is None:
            self._resume = Resume(self.job, self._codec, self._publisher)
        return self._resume

    def publish(self, partial: R) -> None:
        """Stores partial as the job's result; blocks until stored (a plain handler's thread)."""
        publisher = self._publisher
        publisher.publish(publisher.op(self.job, self._codec, partial))
        self.resume.published(partial)

    async def apublish(self, partial: R) -> None:
        """Stores partial as the job's result, from the event loop."""
        publisher = self._publisher
        op = publisher.op(self.job, self._codec, partial)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(publisher.threads, publisher.publish, op)
        self.resume.published(partial)
