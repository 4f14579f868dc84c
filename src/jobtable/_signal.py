"""Signals: typed messages that resume the jobs waiting for them, and the store's send.

A ``Signal`` is a declaration, as a ``Kind`` is: a name and a payload type.
``Store.signal`` stores one under a key and makes every job waiting for
that name and key (``JobContext.wait_for``) ready at once; a job that
begins to wait later still receives it, while it is kept (see
``SIGNAL_RETENTION``).
"""

import dataclasses
import datetime
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict

from jobtable._codec import Codec, _Invalid
from jobtable._engines.base import Engine, Queries
from jobtable._errors import JobNotFound, PayloadError, SecretKeyError
from jobtable._secrets import NoKey, SecretKeys, mentions_secrets, open_all
from jobtable._transaction import adriver_connection, driver_connection
from jobtable._typeddict import usable_by_pydantic
from jobtable._values import checked_id, timestamp, unstorable

P = TypeVar("P")

MAX_SIGNAL_BYTES: Final = 256 * 1024
"""The largest signal payload stored, as JSON: a larger one is refused with PayloadError."""

SIGNAL_RETENTION: Final = datetime.timedelta(days=7)
"""How long a signal is kept for a wait that has not begun yet, by default: a week.

Each runner's maintenance (its heartbeat) deletes older ones; a runner's
``signal_retention`` sets it.
"""


SLEEP_SIGNAL: Final = "jobtable.sleep"
"""The name under which a sleeping job's sleep is noted in job_waits: no signal may take it."""


def _checked_text(what: str, text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{what} is {type(text).__name__}, want str")
    if not text:
        raise ValueError(f"{what} is empty; give a non-empty str")
    if (why := unstorable(text)) is not None:
        raise ValueError(f"{what} {text!r} cannot be stored: {why}")
    return text


class Signal(Generic[P]):
    """A signal's declaration: its name and its payload's type, which every send is checked against.

    ``Signal("approved", Decision)`` declares it once, importable by the code
    that sends it and the handlers that wait for it. A payload may hold
    secrets (``SecretStr``): they are stored encrypted, as in a job's
    payload, and a send without a secret key configured is refused.

    Args:
        name: The signal's name, non-empty; a send and a wait match on it and
            on the key.
        payload_type: P, the type of its payload: any type pydantic can
            validate and dump.

    Raises:
        TypeError: name is not a str, or pydantic cannot validate
            payload_type.
        ValueError: name is empty, cannot be stored, or is jobtable's own.
    """

    __slots__ = ("_adapter", "_secrets", "name", "payload_type")

    def __init__(self, name: str, payload_type: type[P]) -> None:
        self.name = _checked_text("a signal's name", name)
        """The signal's name: a send and a wait match on it and on the key."""
        if name == SLEEP_SIGNAL:
            raise ValueError(f"signal {name!r}: the name is jobtable's own; choose another")
        self.payload_type = payload_type
        """The type of the signal's payload."""
        try:
            self._adapter = pydantic.TypeAdapter[P](usable_by_pydantic(payload_type))
        except pydantic.PydanticSchemaGenerationError as err:
            raise TypeError(
                f"signal {name!r}: its payload type {payload_type!r} cannot be stored; "
                "use a pydantic model or another type pydantic validates"
            ) from err
        self._secrets = mentions_secrets(self._adapter.core_schema)

    def encode(self, payload: P, keys: SecretKeys | None) -> str:
        """The payload as stored JSON, its secrets encrypted under keys.

        Args:
            payload: A payload of the signal's type.
            keys: The secret keys that encrypt its secrets; None when none is
                configured.

        Returns:
            The JSON text to store.

        Raises:
            PayloadError: payload is not a valid payload of the signal, or is
                over MAX_SIGNAL_BYTES; nothing is stored.
            SecretKeyError: payload holds a secret and keys is None; nothing is
                stored.
        """
        try:
            data = Codec._encode(self._adapter, payload, keys, self._secrets)
        except NoKey:
            raise SecretKeyError(
                f"signal {self.name!r}: the payload holds secrets, which are stored encrypted, "
                "and no secret key is configured"
            ) from None
        except _Invalid as err:
            raise PayloadError(
                f"signal {self.name!r}: the payload is not a valid "
                f"{getattr(self.payload_type, '__name__', self.payload_type)}: {err}"
            ) from err.__cause__
        if len(data) > MAX_SIGNAL_BYTES:
            raise PayloadError(
                f"signal {self.name!r}: the payload is {len(data)} bytes, over the limit of "
                f"{MAX_SIGNAL_BYTES}"
            )
        return data.decode()

    def decode(self, text: str, keys: SecretKeys | None) -> P:
        """A stored payload, its secrets decrypted, as the signal's type.

        Args:
            text: The stored JSON text, as ``encode`` returned it.
            keys: The secret keys that decrypt its secrets; None when none is
                configured.

        Returns:
            The payload.

        Raises:
            pydantic.ValidationError: text does not fit the signal's type.
            SecretKeyError: A secret of text cannot be decrypted with keys.
        """
        if self._secrets:
            text = open_all(text, keys)
        return self._adapter.validate_json(text)

    def __repr__(self) -> str:
        return f"Signal({self.name!r}, {getattr(self.payload_type, '__name__', self.payload_type)})"


class TimedOut:
    """What ``JobContext.wait_for`` returns when its timeout passed before a signal came.

    A wait with a timeout returns ``P | TimedOut``: mypy makes the handler
    tell the two apart (``isinstance(answer, TimedOut)``) before it reads the
    payload. ``signal`` and ``key`` say what was waited for.

    Args:
        signal: The name of the signal waited for.
        key: The key waited on.
    """

    __slots__ = ("key", "signal")

    def __init__(self, signal: str, key: str) -> None:
        self.signal = signal
        """The name of the signal waited for."""
        self.key = key
        """The key waited on."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimedOut) and (other.signal, other.key) == (self.signal, self.key)

    def __hash__(self) -> int:
        return hash((self.signal, self.key))

    def __repr__(self) -> str:
        return f"TimedOut(signal={self.signal!r}, key={self.key!r})"


class Approval(BaseModel):
    """A human's decision about a job: the payload of ``APPROVAL``.

    The dashboard's Approve and Reject buttons on a waiting job's page send
    it with the job's id as the key; ``by`` is who decided, when known.
    """

    model_config = ConfigDict(frozen=True)

    approved: bool
    by: str | None = None


APPROVAL: Final = Signal("jobtable.approval", Approval)
"""The signal of a human's approval: ``await ctx.wait_for(APPROVAL, key=ctx.id)``.

The dashboard's job page sends it (Approve, Reject) for a job waiting for it.
"""


class SignalWait(BaseModel):
    """What a waiting job waits for, as ``Store.signal_wait`` reads it.

    ``signal`` and ``key`` name the signal; ``deadline`` is when its wait
    times out (None: never); ``since`` is when it last went back to the
    table to wait. Times are UTC text, as a job's.
    """

    model_config = ConfigDict(frozen=True)

    signal: str
    key: str
    deadline: str | None
    since: str


@dataclasses.dataclass(frozen=True, slots=True)
class ReadSignalWait:
    """The read of what a queued job waits for; raises JobNotFound for an unknown id."""

    job_id: str

    def __call__(self, q: Queries) -> SignalWait | None:
        checked_id(self.job_id)
        job = None if unstorable(self.job_id) else q.get_job(id=self.job_id)
        if job is None:
            raise JobNotFound(f"job {self.job_id!r} not found")
        row = q.get_job_wait(job_id=self.job_id)
        if row is None or job.status != "queued" or row.name == SLEEP_SIGNAL:
            return None
        deadline = None if row.deadline is None else timestamp(row.deadline)
        return SignalWait(
            signal=row.name, key=row.key, deadline=deadline, since=timestamp(row.since)
        )


class SendSignal:
    """The write of one signal: stored, and every job waiting for its name and key made ready."""

    __slots__ = ("key", "name", "now", "payload")

    def __init__(self, name: str, key: str, payload: str, now: str) -> None:
        self.name = name
        self.key = key
        self.payload = payload
        self.now = now

    def __call__(self, q: Queries) -> int:
        return q.send_signal(name=self.name, key=self.key, payload=self.payload, now=self.now)


class SignalMethods:
    """The methods of ``Store`` that send signals; Store sets engine, clock and secret_keys."""

    engine: Engine
    clock: Callable[[], datetime.datetime]
    secret_keys: SecretKeys | None

    def _enqueued(self) -> None:
        """Wakes this process's runners: Store replaces it."""

    def _send(self, signal: "Signal[Any]", key: str, payload: object) -> SendSignal:
        if not isinstance(signal, Signal):
            raise TypeError(f"signal is {type(signal).__name__}, want a jobtable.Signal")
        key = _checked_text(f"signal {signal.name!r}: its key", key)
        text = signal.encode(payload, self.secret_keys)
        return SendSignal(signal.name, key, text, timestamp(self.clock()))

    def signal(self, signal: "Signal[P]", key: str, payload: P, *, conn: object = None) -> int:
        """Sends signal under key: stored, and every job waiting for it is resumed with payload.

        The jobs it makes ready start at once, not at a poll; a job that waits
        for the signal and key later receives it too, while it is kept (the
        runners' ``signal_retention``, 7 days by default). With ``conn=``,
        the application's own connection, it is part of that transaction:
        sent if and only if it commits.

        Args:
            signal: The signal to send, a ``Signal``.
            key: What the signal is about (an order's id, a job's id), a
                non-empty str: it resumes the jobs that wait on that key.
            payload: The signal's payload, of its type.
            conn: The application's own connection (``asignal``: an async
                one), whose transaction the signal joins; None uses the
                store's.

        Returns:
            How many waiting jobs it made ready.

        Raises:
            PayloadError: payload is not the signal's type, or is too large;
                nothing is stored.
            SecretKeyError: payload holds a secret and no secret key is
                configured; nothing is stored.
            TypeError: signal is not a Signal, key is not a str, or conn is
                a connection of another driver.
            ValueError: key is empty or cannot be stored, or conn does not
                reach the store's jobs table.
        """
        op = self._send(signal, key, payload)
        engine = self.engine
        if conn is None:
            woken: int = engine.write(op)
            self._enqueued()
            return woken
        where = f"signal {signal.name!r}"
        return engine.write_in(driver_connection(conn, where), op, where)

    def signal_wait(self, job_id: str) -> SignalWait | None:
        """What the job waits for (``JobContext.wait_for``) while it waits; None otherwise.

        Args:
            job_id: The job's id.

        Returns:
            The signal, key and deadline of its wait, while the job is queued
            waiting for a signal; None otherwise (a sleep is no wait).

        Raises:
            JobNotFound: No job has the id.
            TypeError: job_id is not a str.
        """
        return self.engine.read(ReadSignalWait(job_id))

    async def asignal_wait(self, job_id: str) -> SignalWait | None:
        """The async form of signal_wait."""
        return await self.engine.aread(ReadSignalWait(job_id))

    async def asignal(
        self, signal: "Signal[P]", key: str, payload: P, *, conn: object = None
    ) -> int:
        """The async form of signal."""
        op = self._send(signal, key, payload)
        engine = self.engine
        if conn is None:
            woken: int = await engine.awrite(op)
            self._enqueued()
            return woken
        where = f"signal {signal.name!r}"
        driver = await adriver_connection(conn, where)
        return await engine.awrite_in(driver, op, where)
