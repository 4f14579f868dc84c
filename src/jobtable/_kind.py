"""A registered job kind: its payload and result types, and how they are stored."""

import json
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import pydantic
import pydantic_core

from ._engine import JobRow, Queries
from ._errors import JobNotFound, PayloadError, ResultError
from ._job import Job, Status
from ._store import new_id, now, unstorable

if TYPE_CHECKING:
    from ._runner import Runner

P = TypeVar("P")
R = TypeVar("R")
T = TypeVar("T")


def _unknown_field(stored: object, known: object, path: str) -> str | None:
    """Returns the path of the first key of stored that known lacks, if any."""
    if isinstance(stored, dict) and isinstance(known, dict):
        for key, value in stored.items():
            if key not in known:
                return f"{path}.{key}" if path else str(key)
            found = _unknown_field(value, known[key], f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(stored, list) and isinstance(known, list):
        for i, (a, b) in enumerate(zip(stored, known, strict=False)):
            found = _unknown_field(a, b, f"{path}[{i}]")
            if found:
                return found
    return None


def _non_finite(value: object) -> bool:
    """Tells whether value, as pydantic dumps it in python mode, holds a NaN or an infinity."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_non_finite(v) for v in value)
    return False


class _Invalid(Exception):
    """A value that is not valid data of its type; the message says why, quoting no data."""


class ResultTooLarge(ResultError):
    """A result over the runner's max_result_bytes; its message quotes no data, so it is stored."""


class Codec(Generic[P, R]):
    """Turns a kind's payloads and results into stored JSON and back.

    Only data of the declared types is ever encoded, and payloads and results
    are checked alike: the value must be of the type, dump to JSON that
    validates back as the type, hold no NaN or infinity (JSON has none, and
    pydantic would store null for them), and fit the size limit.
    """

    def __init__(self, kind: str, payload_type: type[P], result_type: type[R]) -> None:
        self.kind = kind
        self.payload_type = payload_type
        self.result_type = result_type
        self._payload = pydantic.TypeAdapter[P](payload_type)
        self._result = pydantic.TypeAdapter[R](result_type)

    @staticmethod
    def _encode(adapter: "pydantic.TypeAdapter[T]", value: T) -> bytes:
        """Returns value as JSON; raises _Invalid, chained to the cause, when it is not valid."""
        try:
            data = adapter.dump_json(value, by_alias=True, warnings="error")
            adapter.validate_json(data)
        except (pydantic.ValidationError, pydantic_core.PydanticSerializationError) as err:
            raise _Invalid(str(err)) from err
        # pydantic dumps NaN and infinities as null, which a type that allows
        # None would read back as None: a changed value, not the one given.
        if b"null" in data and _non_finite(adapter.dump_python(value, mode="python")):
            raise _Invalid("it holds a float NaN or infinity, which JSON cannot store")
        return data

    def encode_payload(self, payload: P, limit: int) -> str:
        """Returns payload as JSON; raises PayloadError when it is not a P or too large."""
        try:
            data = self._encode(self._payload, payload)
        except _Invalid as err:
            raise PayloadError(
                f"enqueue {self.kind!r}: payload is not a valid {_name(self.payload_type)}: {err}"
            ) from err.__cause__
        if len(data) > limit:
            raise PayloadError(
                f"enqueue {self.kind!r}: payload is {len(data)} bytes, over the limit of {limit}"
            )
        return data.decode()

    def decode_payload(self, text: str) -> P:
        """Returns the stored payload as a P.

        A field the type does not know is an error, not silently dropped: the
        payload was written by other code than this handler expects.
        """
        value = self._payload.validate_json(text)
        if self._payload.dump_json(value, by_alias=True) == text.encode():
            # What encode_payload wrote comes back the same: no field is unknown.
            return value
        unknown = _unknown_field(
            json.loads(text), self._payload.dump_python(value, mode="json", by_alias=True), ""
        )
        if unknown:
            raise ValueError(f"payload of {self.kind!r} has an unknown field {unknown!r}")
        return value

    def encode_result(self, result: R, limit: int) -> str:
        """Returns result as JSON, as strictly checked as a payload.

        Raises ResultError when it is not a valid R (its message may quote the
        value: log it, never store it), and ResultTooLarge, whose message
        quotes nothing, when its JSON is over limit bytes.
        """
        try:
            data = self._encode(self._result, result)
        except _Invalid as err:
            raise ResultError(
                f"job kind {self.kind!r}: result is not a valid {_name(self.result_type)}: {err}"
            ) from err.__cause__
        if len(data) > limit:
            raise ResultTooLarge(
                f"result is {len(data)} bytes, over the limit of {limit} (max_result_bytes)"
            )
        return data.decode()

    def decode_result(self, text: str, job_id: str) -> R:
        """Returns a stored result as an R.

        Raises ResultError naming the job and the kind when it no longer
        validates as R (the type changed since it was stored).
        """
        try:
            return self._result.validate_json(text)
        except pydantic.ValidationError as err:
            raise ResultError(
                f"job {job_id!r} of kind {self.kind!r}: its stored result is not a valid "
                f"{_name(self.result_type)}: {err}"
            ) from err


def _name(t: object) -> str:
    return str(getattr(t, "__name__", t))


class GetJob:
    """The read of one job; raises JobNotFound when no job has the id.

    Raises TypeError at once for an id that is not a str. A str that no
    engine can store as text (a NUL, a lone surrogate) is no job's id: it is
    JobNotFound without a query, so every engine answers alike.
    """

    __slots__ = ("job_id",)

    def __init__(self, job_id: str) -> None:
        if not isinstance(job_id, str):
            raise TypeError(f"job id is {type(job_id).__name__}, want str")
        self.job_id = job_id

    def __call__(self, q: Queries) -> JobRow:
        row = None if unstorable(self.job_id) else q.get_job(id=self.job_id)
        if row is None:
            raise JobNotFound(f"job {self.job_id!r} not found")
        return row


def job_from_row(row: JobRow) -> Job:
    """Returns the API's Job for a row, its result as plain JSON data."""
    return Job(
        id=row.id,
        kind=row.kind,
        status=Status(row.status),
        result=None if row.result is None else pydantic_core.from_json(row.result),
        error=row.error,
    )


class Kind(Generic[P, R]):
    """Enqueues and reads jobs of one registered kind.

    ``Runner.register`` returns it; P is the payload type and R the result
    type, both taken from the handler's annotations.
    """

    def __init__(self, runner: "Runner", codec: Codec[P, R]) -> None:
        self._runner = runner
        self._codec = codec

    @property
    def name(self) -> str:
        """The kind's name, as stored in each of its jobs."""
        return self._codec.kind

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"

    def _create(self, payloads: Iterable[P]) -> tuple[list[str], "_CreateJobs"]:
        limit = self._runner.max_payload_bytes
        rows = [(new_id(), self._codec.encode_payload(p, limit)) for p in payloads]
        return [job_id for job_id, _ in rows], _CreateJobs(self.name, rows)

    def enqueue(self, payload: P) -> str:
        """Stores a queued job with payload and returns its id once committed.

        Raises PayloadError, storing nothing, when payload is not a P, cannot
        be encoded, or is over the runner's size limit. A job enqueued before
        the runner starts waits for it.
        """
        return self.enqueue_many([payload])[0]

    async def aenqueue(self, payload: P) -> str:
        """The async form of enqueue."""
        return (await self.aenqueue_many([payload]))[0]

    def enqueue_many(self, payloads: Iterable[P]) -> list[str]:
        """Stores a queued job per payload in one transaction and returns their ids in order.

        Either every job is stored or, on any error, none is.
        """
        ids, op = self._create(payloads)
        self._runner.store.engine.write(op)
        self._runner.notify_enqueued()
        return ids

    async def aenqueue_many(self, payloads: Iterable[P]) -> list[str]:
        """The async form of enqueue_many."""
        ids, op = self._create(payloads)
        await self._runner.store.engine.awrite(op)
        self._runner.notify_enqueued()
        return ids

    def _typed(self, row: JobRow) -> Job[R]:
        if row.kind != self.name:
            raise JobNotFound(f"job {row.id!r} is a {row.kind!r} job, not {self.name!r}")
        return Job[R](
            id=row.id,
            kind=row.kind,
            status=Status(row.status),
            result=None if row.result is None else self._codec.decode_result(row.result, row.id),
            error=row.error,
        )

    def get(self, job_id: str) -> Job[R]:
        """Returns the job with its result parsed as R.

        Raises JobNotFound for an unknown id or a job of another kind.
        """
        return self._typed(self._runner.store.engine.read(GetJob(job_id)))

    async def aget(self, job_id: str) -> Job[R]:
        """The async form of get."""
        return self._typed(await self._runner.store.engine.aread(GetJob(job_id)))


class _CreateJobs:
    """The write that stores jobs of one kind, all queued, in one transaction."""

    __slots__ = ("kind", "rows")

    def __init__(self, kind: str, rows: Sequence[tuple[str, str]]) -> None:
        self.kind = kind
        self.rows = rows

    def __call__(self, q: Queries) -> None:
        if len(self.rows) == 1:
            [(job_id, payload)] = self.rows
            q.create_job(id=job_id, kind=self.kind, payload=payload, now=now())
        else:
            q.insert_jobs(kind=self.kind, jobs=self.rows, now=now())
