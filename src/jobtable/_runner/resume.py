"""What a retried attempt resumes from: its job's recorded steps and its last partial result.

A step (``JobContext.step``) runs its function once per job: its output is
checked and encoded as a result is, and recorded in one transaction fenced
by the attempt's claim; a later attempt of the job reads the recorded
output back instead of running the function again. The first attempt of a
job has no earlier one to resume from, so it reads nothing.
"""

import asyncio
import concurrent.futures
import inspect
import logging
import typing
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import pydantic

from jobtable._codec import Codec, StepCodec
from jobtable._engines.rows import ClaimedRow
from jobtable._errors import StepError
from jobtable._operations import GetJob
from jobtable._runner.run_operations import ReadStep, RecordStep
from jobtable._runner.suspend import RESERVED_PREFIX, SuspendWait, Waiting
from jobtable._store import Store

R = TypeVar("R")

_CODECS: dict[object, StepCodec[Any]] = {}
"""The codec of each step output type met, built once: a TypeAdapter costs milliseconds."""


class Publisher(Protocol):
    """What a Resume writes through: the runner's ``jobtable._runner.attempt.Publisher``."""

    store: Store
    max_result_bytes: int
    threads: concurrent.futures.Executor | None
    logger: logging.Logger

    def check(self, job: ClaimedRow, what: str) -> None:
        """Raises NotRunning, saying what was refused, once the runner gave up on its handlers."""
        ...

    def publish(self, op: "RecordStep | SuspendWait") -> None:
        """Runs op, retrying a transient store error as a partial result's write is."""
        ...


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
