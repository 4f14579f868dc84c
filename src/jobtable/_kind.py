"""A job kind: a declaration of its name, payload type and result type, shared by all processes.

A web process imports the declarations to enqueue and read jobs through a
store; a worker attaches a handler to each. Nothing here imports handler
code or the runner.
"""

import copy
from collections.abc import Iterable
from typing import Any, Generic, NamedTuple, TypeVar, overload

from ._codec import Codec
from ._engine import JobRow
from ._errors import JobNotFound
from ._job import Job, Status
from ._ops import CreateJobs, GetJob, create_jobs
from ._store import Store
from ._values import new_id, unstorable

P = TypeVar("P")
R = TypeVar("R")


class _Binding(NamedTuple):
    """Where a bound kind's jobs go: its runner's store, under the runner's payload limit."""

    store: Store
    max_payload_bytes: int


class Kind(Generic[P, R]):
    """A job kind: its name, as stored in each of its jobs, its payload type P and result type R.

    ``Kind(name, P, R)`` declares it, in a module that the web process and
    the workers both import and that holds no handler code; a worker attaches
    a handler with ``Runner.handler``. Every method takes the store first:
    ``kind.enqueue(store, payload)``, ``kind.get(store, job_id)``. The Kind
    that ``Runner.register`` returns is bound to its runner, and its methods
    also take no store: ``kind.enqueue(payload)`` enqueues into the runner's
    store under the runner's payload limit.

    P and R are any types pydantic can validate and dump; a kind whose types
    it cannot raises TypeError naming the kind.
    """

    def __init__(self, name: str, payload_type: type[P], result_type: type[R]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"Kind {name!r}: empty kind")
        if why := unstorable(name):
            raise ValueError(f"Kind {name!r}: the kind name cannot be stored: {why}")
        try:
            self._codec = Codec[P, R](name, payload_type, result_type)
        except Exception as err:
            raise TypeError(
                f"Kind {name!r}: pydantic cannot validate and dump its types: {err}"
            ) from err
        self._binding: _Binding | None = None

    @property
    def name(self) -> str:
        """The kind's name, as stored in each of its jobs."""
        return self._codec.kind

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"

    def _bind(self, store: Store, max_payload_bytes: int) -> "Kind[P, R]":
        """Returns a copy of this kind bound to store, whose methods also work without one."""
        bound = copy.copy(self)
        bound._binding = _Binding(store, max_payload_bytes)
        return bound

    def _where(self, verb: str, args: tuple[Any, ...]) -> tuple[_Binding, Any]:
        """Returns the store and limit of a call with args, and the call's one other argument."""
        if len(args) == 2:
            store, value = args
            if not isinstance(store, Store):
                raise TypeError(
                    f"{verb} {self.name!r}: want a Store first, got {type(store).__name__}"
                )
            return _Binding(store, store.max_payload_bytes), value
        if len(args) != 1:
            raise TypeError(f"{verb} {self.name!r}: takes (store, ...), got {len(args)} arguments")
        if self._binding is None:
            raise TypeError(
                f"{verb} {self.name!r}: the kind is not bound to a runner; "
                f"pass the store first: kind.{verb}(store, ...)"
            )
        return self._binding, args[0]

    def _create(self, binding: _Binding, payloads: Iterable[P]) -> tuple[list[str], CreateJobs]:
        limit = binding.max_payload_bytes
        rows = [(new_id(), self._codec.encode_payload(p, limit)) for p in payloads]
        return [job_id for job_id, _ in rows], create_jobs(self.name, rows)

    @overload
    def enqueue(self, store: Store, payload: P, /) -> str: ...
    @overload
    def enqueue(self, payload: P, /) -> str: ...
    def enqueue(self, *args: Any) -> str:
        """Stores a queued job with payload and returns its id once committed.

        Raises PayloadError, storing nothing, when payload is not a P, cannot
        be encoded, or is over the size limit (the store's, or the runner's
        for a bound kind). A job waits in the table until a runner with a
        handler for the kind claims it.
        """
        binding, payload = self._where("enqueue", args)
        return self._enqueue_many(binding, [payload])[0]

    @overload
    async def aenqueue(self, store: Store, payload: P, /) -> str: ...
    @overload
    async def aenqueue(self, payload: P, /) -> str: ...
    async def aenqueue(self, *args: Any) -> str:
        """The async form of enqueue."""
        binding, payload = self._where("enqueue", args)
        return (await self._aenqueue_many(binding, [payload]))[0]

    @overload
    def enqueue_many(self, store: Store, payloads: Iterable[P], /) -> list[str]: ...
    @overload
    def enqueue_many(self, payloads: Iterable[P], /) -> list[str]: ...
    def enqueue_many(self, *args: Any) -> list[str]:
        """Stores a queued job per payload in one transaction and returns their ids in order.

        Either every job is stored or, on any error, none is.
        """
        binding, payloads = self._where("enqueue_many", args)
        return self._enqueue_many(binding, payloads)

    @overload
    async def aenqueue_many(self, store: Store, payloads: Iterable[P], /) -> list[str]: ...
    @overload
    async def aenqueue_many(self, payloads: Iterable[P], /) -> list[str]: ...
    async def aenqueue_many(self, *args: Any) -> list[str]:
        """The async form of enqueue_many."""
        binding, payloads = self._where("enqueue_many", args)
        return await self._aenqueue_many(binding, payloads)

    def _enqueue_many(self, binding: _Binding, payloads: Iterable[P]) -> list[str]:
        ids, op = self._create(binding, payloads)
        binding.store.engine.write(op)
        binding.store._enqueued()
        return ids

    async def _aenqueue_many(self, binding: _Binding, payloads: Iterable[P]) -> list[str]:
        ids, op = self._create(binding, payloads)
        await binding.store.engine.awrite(op)
        binding.store._enqueued()
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

    @overload
    def get(self, store: Store, job_id: str, /) -> Job[R]: ...
    @overload
    def get(self, job_id: str, /) -> Job[R]: ...
    def get(self, *args: Any) -> Job[R]:
        """Returns the job with its result parsed as R.

        Raises JobNotFound for an unknown id or a job of another kind,
        TypeError for an id that is not a str, and ResultError, naming the job
        and the kind, for a stored result that no longer validates as R.
        """
        binding, job_id = self._where("get", args)
        return self._typed(binding.store.engine.read(GetJob(job_id)))

    @overload
    async def aget(self, store: Store, job_id: str, /) -> Job[R]: ...
    @overload
    async def aget(self, job_id: str, /) -> Job[R]: ...
    async def aget(self, *args: Any) -> Job[R]:
        """The async form of get."""
        binding, job_id = self._where("get", args)
        return self._typed(await binding.store.engine.aread(GetJob(job_id)))
