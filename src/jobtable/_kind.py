"""A job kind: a declaration of its name, payload type and result type, shared by all processes.

A web process imports the declarations to enqueue and read jobs through a
store; a worker attaches a handler to each. Nothing here imports handler
code or the runner.
"""

import copy
import datetime
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, NamedTuple, TypeVar, overload

from typing_extensions import Unpack

from jobtable._codec import Codec
from jobtable._engines.base import Queries
from jobtable._engines.rows import JobRow, NewJob
from jobtable._errors import JobNotFound
from jobtable._job import Job, Status
from jobtable._operations import GetJob, create_jobs
from jobtable._options import EnqueueOptions, Merges, Options, RetryPolicy, check_retry
from jobtable._store import Store
from jobtable._telemetry import enqueue_trace
from jobtable._transaction import adriver_connection, driver_connection
from jobtable._unique import (
    EnqueueResult,
    Unique,
    check_unique,
    create_unique_jobs,
    ids_of,
    kept_jobs,
    results_of,
)
from jobtable._values import new_id, timestamp, unstorable

P = TypeVar("P")
R = TypeVar("R")


class _Named(NamedTuple):
    """The ids and the enqueue time an enqueue's jobs take, given before it runs."""

    ids: Sequence[str]
    at: datetime.datetime


class _Binding(NamedTuple):
    """Where a bound kind's jobs go: its runner's store, under the runner's payload limit."""

    store: Store
    max_payload_bytes: int


_Stored = tuple[list[NewJob], list[EnqueueResult] | None]
"""What an enqueue stored: its jobs, and its write's results (None: every job stored)."""


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

    The options are the defaults of the kind's jobs; each enqueue may override
    all but retry: ``max_attempts`` (1: a failed job stays failed),
    ``priority`` (lower runs first, FIFO within one; 0), ``queue``
    (``"default"``), ``timeout`` (seconds one attempt may take; None has no
    limit) and ``delay`` (a timedelta; an enqueue may give ``run_at``, an
    aware datetime, instead). ``retry`` is the wait before the next attempt,
    a callable (attempt) -> timedelta given the attempt that failed; the
    default is ``ExponentialBackoff()``. ``unique`` (a ``Unique``; None, the
    default, for none) makes at most one job per key at a time: a colliding
    enqueue stores nothing and returns the holder's id (``enqueue_result``
    tells it was a duplicate); an enqueue's ``unique=None`` turns it off. A
    bad value raises TypeError or ValueError naming the option, and stores
    nothing.
    """

    def __init__(
        self,
        name: str,
        payload_type: type[P],
        result_type: type[R],
        *,
        max_attempts: int = 1,
        retry: RetryPolicy | None = None,
        priority: int = 0,
        queue: str = "default",
        timeout: float | None = None,
        delay: datetime.timedelta | None = None,
        unique: Unique | None = None,
    ) -> None:
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
        where = f"Kind {name!r}"
        self.retry: RetryPolicy = check_retry(where, retry)
        """The wait before a failed attempt's next one, given the failed attempt's number."""
        self.options = Options(max_attempts, priority, queue, timeout, delay)
        """The defaults of the kind's jobs; each enqueue may override them."""
        self.options.check(where)
        self._merges = Merges()
        self.unique = check_unique(where, unique, self._codec)
        """The kind's uniqueness, or None; each enqueue may override it."""
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

    def _create(
        self,
        verb: str,
        binding: _Binding,
        payloads: Iterable[P],
        overrides: EnqueueOptions,
        traceparent: str | None = None,
        named: "_Named | None" = None,
    ) -> tuple[list[NewJob], Callable[[Queries], list[EnqueueResult] | None]]:
        kind = self._codec.kind
        where = f"{verb} {kind!r}"
        if overrides:
            options, unique, run_at = self._overridden(where, overrides)
        else:
            options, unique, run_at = self.options, self.unique, None
        moment = binding.store.clock() if named is None else named.at
        starts = options.run_at(where, moment, run_at)
        limit = binding.max_payload_bytes
        made = None if named is None else iter(named.ids)
        jobs = [
            NewJob(
                new_id() if made is None else next(made),
                self._codec.encode_payload(p, limit),
                starts,
                options.queue,
                options.priority,
                options.max_attempts,
                options.timeout,
                traceparent,
            )
            for p in payloads
        ]
        # A job that starts now has run_at and created_at the same text: one timestamp for both.
        now = starts if run_at is None and options.delay is None else timestamp(moment)
        if unique is None:
            return jobs, create_jobs(kind, jobs, now)
        jobs = [
            job._replace(
                unique_key=unique.key_of(where, job.payload, moment), unique_statuses=unique.mask
            )
            for job in jobs
        ]
        return jobs, create_unique_jobs(kind, jobs, now)

    def _overridden(
        self, where: str, overrides: EnqueueOptions
    ) -> tuple[Options, Unique | None, object]:
        """The options, uniqueness and run_at of an enqueue that gave overrides, checked."""
        given: dict[str, Any] = dict(overrides)
        run_at = given.pop("run_at", None)
        unique = check_unique(where, given.pop("unique", self.unique), self._codec)
        if run_at is not None and "delay" not in given:
            given["delay"] = None  # an explicit run_at replaces the kind's delay
        options = self._merges.merged(where, self.options, given) if given else self.options
        return options, unique, run_at

    @overload
    def enqueue(self, store: Store, payload: P, /, **options: Unpack[EnqueueOptions]) -> str: ...
    @overload
    def enqueue(self, payload: P, /, **options: Unpack[EnqueueOptions]) -> str: ...
    def enqueue(self, *args: Any, **options: Unpack[EnqueueOptions]) -> str:
        """Stores a queued job with payload and returns its id once committed.

        options override the kind's: max_attempts, priority, queue, timeout,
        and delay or run_at (see ``Kind``). Raises PayloadError, storing
        nothing, when payload is not a P, cannot be encoded, or is over the
        size limit (the store's, or the runner's for a bound kind), and
        TypeError or ValueError naming the option for a bad option. A job
        waits in the table until a runner with a handler for the kind claims
        it, no earlier than its run_at.

        With ``conn=``, the application's own connection (sqlite3, psycopg,
        or a SQLAlchemy Connection or Session over one), the job joins its
        transaction instead: it exists if and only if that commits, and the
        commit wakes the runners; the store's durable setting does not apply.
        A conn that cannot reach the store's jobs table raises TypeError (the
        wrong driver, or an async one: use aenqueue) or ValueError (another
        database or file, or a search_path without the store's schema).
        """
        binding, payload = self._where("enqueue", args)
        return ids_of(*self._enqueue_many("enqueue", binding, [payload], options))[0]

    @overload
    async def aenqueue(
        self, store: Store, payload: P, /, **options: Unpack[EnqueueOptions]
    ) -> str: ...
    @overload
    async def aenqueue(self, payload: P, /, **options: Unpack[EnqueueOptions]) -> str: ...
    async def aenqueue(self, *args: Any, **options: Unpack[EnqueueOptions]) -> str:
        """The async form of enqueue."""
        binding, payload = self._where("enqueue", args)
        return ids_of(*await self._aenqueue_many("enqueue", binding, [payload], options))[0]

    @overload
    def enqueue_many(
        self, store: Store, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[str]: ...
    @overload
    def enqueue_many(
        self, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[str]: ...
    def enqueue_many(self, *args: Any, **options: Unpack[EnqueueOptions]) -> list[str]:
        """Stores a queued job per payload in one transaction and returns their ids in order.

        options apply to every job, as in enqueue. Either every job is stored
        or, on any error, none is.
        """
        binding, payloads = self._where("enqueue_many", args)
        return ids_of(*self._enqueue_many("enqueue_many", binding, payloads, options))

    @overload
    async def aenqueue_many(
        self, store: Store, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[str]: ...
    @overload
    async def aenqueue_many(
        self, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[str]: ...
    async def aenqueue_many(self, *args: Any, **options: Unpack[EnqueueOptions]) -> list[str]:
        """The async form of enqueue_many."""
        binding, payloads = self._where("enqueue_many", args)
        return ids_of(*await self._aenqueue_many("enqueue_many", binding, payloads, options))

    @overload
    def enqueue_result(
        self, store: Store, payload: P, /, **options: Unpack[EnqueueOptions]
    ) -> EnqueueResult: ...
    @overload
    def enqueue_result(self, payload: P, /, **options: Unpack[EnqueueOptions]) -> EnqueueResult: ...
    def enqueue_result(self, *args: Any, **options: Unpack[EnqueueOptions]) -> EnqueueResult:
        """enqueue, telling whether the job was a duplicate: ``EnqueueResult(id, duplicate)``.

        duplicate is True when a job of the kind held the unique key: nothing
        was stored and id is the holder's. Without ``unique`` it is False.
        """
        binding, payload = self._where("enqueue", args)
        return results_of(*self._enqueue_many("enqueue", binding, [payload], options))[0]

    @overload
    async def aenqueue_result(
        self, store: Store, payload: P, /, **options: Unpack[EnqueueOptions]
    ) -> EnqueueResult: ...
    @overload
    async def aenqueue_result(
        self, payload: P, /, **options: Unpack[EnqueueOptions]
    ) -> EnqueueResult: ...
    async def aenqueue_result(self, *args: Any, **options: Unpack[EnqueueOptions]) -> EnqueueResult:
        """The async form of enqueue_result."""
        binding, payload = self._where("enqueue", args)
        return results_of(*await self._aenqueue_many("enqueue", binding, [payload], options))[0]

    @overload
    def enqueue_many_results(
        self, store: Store, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[EnqueueResult]: ...
    @overload
    def enqueue_many_results(
        self, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[EnqueueResult]: ...
    def enqueue_many_results(
        self, *args: Any, **options: Unpack[EnqueueOptions]
    ) -> list[EnqueueResult]:
        """enqueue_many, with an EnqueueResult per payload, in order.

        A payload whose key an earlier one of the batch took is a duplicate of it.
        """
        binding, payloads = self._where("enqueue_many", args)
        return results_of(*self._enqueue_many("enqueue_many", binding, payloads, options))

    @overload
    async def aenqueue_many_results(
        self, store: Store, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[EnqueueResult]: ...
    @overload
    async def aenqueue_many_results(
        self, payloads: Iterable[P], /, **options: Unpack[EnqueueOptions]
    ) -> list[EnqueueResult]: ...
    async def aenqueue_many_results(
        self, *args: Any, **options: Unpack[EnqueueOptions]
    ) -> list[EnqueueResult]:
        """The async form of enqueue_many_results."""
        binding, payloads = self._where("enqueue_many", args)
        return results_of(*await self._aenqueue_many("enqueue_many", binding, payloads, options))

    def _enqueue_many(
        self,
        verb: str,
        binding: _Binding,
        payloads: Iterable[P],
        options: EnqueueOptions,
        named: "_Named | None" = None,
    ) -> _Stored:
        """Stores a job per payload; returns the jobs and the write's results (see _Stored).

        Every enqueue goes through here or its async form: the trace, the
        traceparent stored with the jobs, and the runners' wake-up. named, when
        given, holds the jobs' ids and their enqueue time (the Django backend
        names a job before its transaction commits); by default each gets a
        new id, and the time is the store clock's.
        """
        conn = options.pop("conn", None)
        with enqueue_trace(binding.store, self._codec.kind) as trace:
            jobs, op = self._create(verb, binding, payloads, options, trace.traceparent, named)
            if conn is None:
                results = binding.store.engine.write(op)
                binding.store._enqueued()
            else:
                # In the caller's transaction: runners learn of the jobs at its
                # commit, from the engine (NOTIFY, the WAL watch), not from here.
                where = f"{verb} {self.name!r}"
                results = binding.store.engine.write_in(driver_connection(conn, where), op, where)
            trace.stored(kept_jobs(jobs, results))
            return jobs, results

    async def _aenqueue_many(
        self,
        verb: str,
        binding: _Binding,
        payloads: Iterable[P],
        options: EnqueueOptions,
        named: "_Named | None" = None,
    ) -> _Stored:
        """The async form of _enqueue_many."""
        conn = options.pop("conn", None)
        with enqueue_trace(binding.store, self._codec.kind) as trace:
            jobs, op = self._create(verb, binding, payloads, options, trace.traceparent, named)
            if conn is None:
                results = await binding.store.engine.awrite(op)
                binding.store._enqueued()
            else:
                where = f"{verb} {self.name!r}"
                driver = await adriver_connection(conn, where)
                results = await binding.store.engine.awrite_in(driver, op, where)
            trace.stored(kept_jobs(jobs, results))
            return jobs, results

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
