"""Durable waiting: a handler that sleeps or waits for a signal gives its worker back.

A sleep (``JobContext.sleep_until``) records its wake-up time as a step of
the job, then ends the attempt: in one write the job goes back to the
table, scheduled at that time, using none of its attempts, its sleep noted
in job_waits as a wait for no signal. A wait for a signal
(``JobContext.wait_for``) records what it waits for (job_waits) and puts
the job back in the same way, scheduled at its timeout; a signal makes it
ready at once. Either way the handler runs again from the top at its next
claim, its completed steps skipped, and the sleep or wait it stopped at
returns: a sleep whose time has come, a wait with the signal's payload or
``TimedOut``. Nothing is held meanwhile: no worker, no connection, no
process, so a restart or a kill of the runner changes nothing.

Each sleep and each wait of a handler is known by its place among the
handler's sleeps (or waits): the first sleep is ``jobtable:sleep:1``. So a
handler must sleep and wait in the same order each time it runs, as it
calls its steps.
"""

import asyncio
import dataclasses
import datetime
import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel

from jobtable._codec import StepCodec
from jobtable._engines.base import Queries
from jobtable._engines.rows import ClaimedRow
from jobtable._engines.wait_queries import JobWaitRow, SignalRow
from jobtable._runner.run_operations import ReadStep, RecordStep
from jobtable._runner.shared import JobLogger
from jobtable._signal import SLEEP_SIGNAL, Signal, TimedOut
from jobtable._values import timestamp

P = TypeVar("P")
T = TypeVar("T")

RESERVED_PREFIX = "jobtable:"
"""The prefix of the step names jobtable records for sleeps and waits; no step may take it."""

_NEVER = timestamp(datetime.datetime.max.replace(tzinfo=datetime.UTC))
"""The run_at of a job waiting with no timeout: the last moment of year 9999."""

_SLEEP = StepCodec[str](str)


class _Answer(BaseModel):
    """A wait's answer as recorded: the signal received (its id and payload), or none: timed out."""

    signal_id: int | None = None
    payload: str | None = None


_ANSWER = StepCodec[_Answer](_Answer)


class Suspended(BaseException):
    """Raised through a handler that sleeps or waits: its attempt ends, its job resumes later.

    A BaseException, so that a handler's ``except Exception`` does not keep
    it from ending the attempt. run_at is when a sleeping job resumes; None
    for a wait, which put the job back itself.
    """

    def __init__(self, run_at: str | None) -> None:
        super().__init__("the job sleeps or waits; its attempt ends and it resumes later")
        self.run_at = run_at


class SuspendWait:
    """The write that records a job's wait and puts the job back in its queue, fenced by claim."""

    __slots__ = (
        "after_id",
        "attempt",
        "deadline",
        "done",
        "job_id",
        "key",
        "kind",
        "name",
        "now",
        "position",
    )

    def __init__(
        self,
        job: ClaimedRow,
        position: int,
        signal: tuple[str, str, int],
        deadline: str | None,
        now: str,
    ) -> None:
        self.job_id = job.id
        self.kind = job.kind
        self.attempt = job.attempt
        self.position = position
        self.name, self.key, self.after_id = signal
        self.deadline = deadline
        self.now = now
        self.done = False
        """Whether the job went back to the table: not when it is not running under
        this claim, or its cancel was requested (its attempt then ends as a snooze)."""

    @property
    def run_at(self) -> str:
        """When the job runs again without a signal: its deadline, or never."""
        return _NEVER if self.deadline is None else self.deadline

    def __call__(self, q: Queries) -> None:
        changed = q.suspend_waiting_job(
            id=self.job_id,
            attempt=self.attempt,
            position=self.position,
            name=self.name,
            key=self.key,
            after_id=self.after_id,
            deadline=self.deadline,
            run_at=self.run_at,
            now=self.now,
        )
        self.done = changed == 1


@dataclasses.dataclass(frozen=True, slots=True)
class _FindSignal:
    """The read of the oldest signal of name and key newer than after_id."""

    name: str
    key: str
    after_id: int

    def __call__(self, q: Queries) -> SignalRow | None:
        return q.find_signal(name=self.name, key=self.key, after_id=self.after_id)


class AnswerWait(RecordStep):
    """A wait's answer recorded as its step, and the job's wait forgotten, in one write."""

    __slots__ = ()

    def __call__(self, q: Queries) -> None:
        super().__call__(q)
        q.end_job_wait(job_id=self.job_id)


class Waiting:
    """One attempt's sleeps and waits, in the order its handler makes them; see the module.

    Each call blocks on the store (reads, and the writes through the
    publisher, which retries them); an async handler runs it on a thread.
    """

    __slots__ = ("_job", "_logger", "_publisher", "_received", "_sleeps", "_waits")

    def __init__(self, job: ClaimedRow, publisher: Any, logger: logging.Logger) -> None:
        self._job = job
        self._publisher = publisher
        self._logger = logger
        self._sleeps = 0
        self._waits = 0
        # The newest signal each (name, key) gave this job's earlier waits.
        self._received: dict[tuple[str, str], int] = {}

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) on the publisher's threads: how an async handler's sleep or wait runs."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._publisher.threads, functools.partial(fn, *args))

    def _recorded(self, name: str) -> str | None:
        if self._job.attempt <= 1:
            return None
        text: str | None = self._publisher.store.engine.read(ReadStep(self._job.id, name))
        return text

    def _write(self, op: Any, what: str) -> None:
        self._publisher.check(self._job, what)
        self._publisher.publish(op)

    def sleep_until(self, when: datetime.datetime) -> None:
        """Returns once when has come; before, records it and raises Suspended (see the module)."""
        if not isinstance(when, datetime.datetime):
            raise TypeError(f"sleep until {when!r}: want an aware datetime")
        if when.tzinfo is None:
            raise ValueError(f"sleep until {when!r}: a naive datetime has no time zone")
        self._sleeps += 1
        self._sleep(f"{RESERVED_PREFIX}sleep:{self._sleeps}", lambda: when)

    def sleep_for(self, delta: datetime.timedelta) -> None:
        """Returns once delta passed since the first attempt that slept here; see sleep_until."""
        if not isinstance(delta, datetime.timedelta):
            raise TypeError(f"sleep for {delta!r}: want a datetime.timedelta")
        self._sleeps += 1
        store = self._publisher.store
        self._sleep(f"{RESERVED_PREFIX}sleep:{self._sleeps}", lambda: store.clock() + delta)

    def _sleep(self, name: str, when: Any) -> None:
        store = self._publisher.store
        text = self._recorded(name)
        if text is None:
            wake = timestamp(when())
            if wake <= store.now():
                return
            encoded = _SLEEP.encode(name, wake, 1024, None)
            self._write(RecordStep(self._job, name, encoded, store.now()), f"sleep {name!r}")
        else:
            wake = _SLEEP.decode(name, self._job.id, text, None)
        if wake > store.now():
            # Recorded in job_waits too, as a wait for no signal: drain and the
            # dashboard tell a sleeping job from one waiting for a retry.
            op = SuspendWait(
                self._job, self._sleeps, (SLEEP_SIGNAL, self._job.id, 0), wake, store.now()
            )
            self._write(op, f"sleep {name!r}")
            raise Suspended(None if op.done else wake)

    def wait_for(
        self, signal: Signal[P], key: str, timeout: datetime.timedelta | None
    ) -> "P | TimedOut":
        """The payload of the signal of name and key for this wait, or TimedOut; or Suspended."""
        if not isinstance(signal, Signal):
            raise TypeError(f"wait for {signal!r}: want a jobtable.Signal")
        if not isinstance(key, str) or not key:
            raise TypeError(f"wait for signal {signal.name!r}: the key must be a non-empty str")
        if timeout is not None and not isinstance(timeout, datetime.timedelta):
            raise TypeError(
                f"wait for signal {signal.name!r}: timeout {timeout!r}: want a timedelta"
            )
        self._waits += 1
        position = self._waits
        name = f"{RESERVED_PREFIX}wait:{position}"
        text = self._recorded(name)
        if text is not None:
            return self._replayed(signal, key, name, text)
        store = self._publisher.store
        engine = store.engine
        after = self._received.get((signal.name, key), 0)
        waiting: JobWaitRow | None = None
        if self._job.attempt > 1:
            waiting = engine.read(lambda q: q.get_job_wait(job_id=self._job.id))
        if waiting is not None and (waiting.position, waiting.name, waiting.key) == (
            position,
            signal.name,
            key,
        ):
            deadline = None if waiting.deadline is None else timestamp(waiting.deadline)
        elif timeout is None:
            deadline = None
        else:
            deadline = timestamp(store.clock() + timeout)
        while True:
            found: SignalRow | None = engine.read(_FindSignal(signal.name, key, after))
            if found is None:
                break
            try:
                payload = signal.decode(found.payload, store.secret_keys)
            except pydantic.ValidationError:
                JobLogger(self._logger, self._job.id, self._job.kind, self._job.attempt).error(
                    "signal %s of %r, key %r: its payload is not a valid %s; skipped",
                    found.id,
                    signal.name,
                    key,
                    getattr(signal.payload_type, "__name__", signal.payload_type),
                )
                after = found.id
                continue
            self._answer(name, _Answer(signal_id=found.id, payload=found.payload))
            self._received[signal.name, key] = found.id
            return payload
        if deadline is not None and deadline <= store.now():
            self._answer(name, _Answer())
            return TimedOut(signal.name, key)
        op = SuspendWait(self._job, position, (signal.name, key, after), deadline, store.now())
        self._write(op, f"wait for signal {signal.name!r}")
        raise Suspended(None if op.done else op.run_at)

    def _answer(self, name: str, answer: _Answer) -> None:
        store = self._publisher.store
        encoded = _ANSWER.encode(name, answer, 1 << 30, None)
        self._write(AnswerWait(self._job, name, encoded, store.now()), f"wait {name!r}")

    def _replayed(self, signal: Signal[P], key: str, name: str, text: str) -> "P | TimedOut":
        answer = _ANSWER.decode(name, self._job.id, text, None)
        if answer.signal_id is None or answer.payload is None:
            return TimedOut(signal.name, key)
        received = self._received.get((signal.name, key), 0)
        self._received[signal.name, key] = max(received, answer.signal_id)
        return signal.decode(answer.payload, self._publisher.store.secret_keys)
