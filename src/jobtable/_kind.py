"""A job kind: a declaration of its name, payload type and result type, shared by all processes.

A web process imports the declarations to enqueue and read jobs through a
store; a worker attaches a handler to each. Nothing here imports handler
code or the runner.
"""

import copy
import datetime
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast, overload

from typing_extensions import Unpack

from jobtable._codec import Codec
from jobtable._debounce import check_debounce, debounced, split_debounce
from jobtable._engines.base import Queries
from jobtable._engines.rows import NewJob
from jobtable._enqueue import Binding, Named, Stored, astore_jobs, binding_of, store_jobs
from jobtable._flow import FLOW_OPTIONS, Partition, check_flow, check_key, fed_field, with_flow
from jobtable._flow import Sequence as JobSequence
from jobtable._job import Job
from jobtable._labels import EnqueueHook, Labels, check_hook, check_tags, split_labels
from jobtable._operations import GetJob, create_jobs
from jobtable._options import EnqueueOptions, JobOptions, Merges, Options, RetryPolicy, check_retry
from jobtable._store import Store
from jobtable._unique import (
    EnqueueResult,
    Unique,
    check_unique,
    create_unique_jobs,
    ids_of,
    keyed_unique,
    results_of,
)
from jobtable._values import new_id, timestamp, unstorable
from jobtable._wait.waiting import Waiting

P = TypeVar("P")
R = TypeVar("R")


class Kind(Waiting[P, R]):
    """A job kind: its name, as stored in each of its jobs, its payload type P and result type R.

    ``Kind(name, P, R)`` declares it, in a module that the web process and
    the workers both import and that holds no handler code; a worker attaches
    a handler with ``Runner.handler``. Every method takes the store first:
    ``kind.enqueue(store, payload)``, ``kind.get(store, job_id)``. The Kind
    that ``Runner.register`` returns is bound to its runner, and its methods
    also take no store: ``kind.enqueue(payload)`` enqueues into the runner's
    store under the runner's payload limit.

    The options are the defaults of the kind's jobs; each enqueue may
    override all but retry.

    Args:
        name: The kind's name, as stored in each of its jobs.
        payload_type: P, any type pydantic can validate and dump.
        result_type: R, any type pydantic can validate and dump.
        max_attempts: How many times a job may be claimed (1: a failed job
            stays failed).
        retry: The wait before the next attempt, a callable (attempt) ->
            timedelta given the attempt that failed; None is
            ``ExponentialBackoff()``.
        priority: Lower runs first, FIFO within one.
        queue: The queue its jobs go to.
        timeout: Seconds one attempt may take; None has no limit.
        delay: How long after its enqueue a job becomes ready (an enqueue
            may give ``run_at``, an aware datetime, instead).
        unique: At most one job per key at a time: a colliding enqueue
            stores nothing and returns the holder's id (``enqueue_result``
            tells it was a duplicate); an enqueue's ``unique=None`` turns it
            off. None has no uniqueness.
        partition: Gives each job its partition key (an enqueue may give
            ``partition_key=`` instead).
        sequence: Gives each job its sequence key (an enqueue may give
            ``sequence_key=`` instead).
        tags: Labels of each job, with an enqueue's ``tags=``.
        meta: The model of an enqueue's ``meta=``; None takes any JSON object.

    Raises:
        TypeError: pydantic cannot validate and dump P or R (naming the
            kind), or an option of the wrong type (naming it).
        ValueError: An empty or unstorable name, or a bad option value
            (naming it).
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
        partition: Partition | None = None,
        sequence: JobSequence | None = None,
        tags: Iterable[str] | None = None,
        meta: type[Any] | None = None,
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
        self.flow: tuple[Partition | None, JobSequence | None] = check_flow(
            where, self._codec, partition, sequence
        )
        """The kind's ``Partition`` and ``Sequence``, each or both None (see Flow control).

        A ``Sequence`` declared without ``by`` is here keyed by the kind's name.
        """
        self.labels = Labels(name, where, tags, meta)
        self._binding: Binding | None = None

    @property
    def name(self) -> str:
        """The kind's name, as stored in each of its jobs."""
        return self._codec.kind

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"

    def on_enqueue(self, hook: EnqueueHook) -> EnqueueHook:
        """Runs hook before each job of the kind is stored, after the store's: Store.on_enqueue.

        Args:
            hook: A plain ``def`` taking a ``jobtable.Enqueueing``.

        Returns:
            hook, unchanged (a decorator).

        Raises:
            TypeError: hook is not a plain callable.
        """
        check_hook(f"Kind {self.name!r}.on_enqueue", hook)
        self.labels.hooks.append(hook)
        return hook

    def _bind(self, store: Store, max_payload_bytes: int) -> "Kind[P, R]":
        """Returns a copy of this kind bound to store, whose methods also work without one."""
        bound = copy.copy(self)
        bound._binding = Binding(store, max_payload_bytes)
        return bound

    def _where(self, verb: str, args: tuple[Any, ...]) -> tuple[Binding, Any]:
        """Returns the store and limit of a call with args, and the call's one other argument."""
        return binding_of(f"{verb} {self.name!r}", verb, args, self._binding)

    def _create(
        self,
        verb: str,
        binding: Binding,
        payloads: Iterable[Any],
        overrides: JobOptions | EnqueueOptions,
        traceparent: str | None = None,
        named: Named | None = None,
        fed: bool = False,
    ) -> tuple[list[NewJob], Callable[[Queries], list[EnqueueResult] | None]]:
        """The jobs of an enqueue of payloads and the write storing them: the one way to make one.

        Every way of creating a job comes here (``enqueue`` and its relatives,
        a workflow's nodes, ``ctx.workflow.add``, a periodic tick, the Django
        backend), so each applies the kind's declarations (queue, priority,
        attempts, timeout, delay, tags, meta model, unique, ``Partition``,
        ``Sequence``, the enqueue hooks, secrets' encryption) and overrides the
        same way. fed: the payloads are a workflow's nodes whose results feed
        the jobs; each job is stored with a null payload, its dependency's
        result replaces it, and a key by a payload field is computed then
        (``fed_keys``). Raises, storing nothing, for a bad payload or option.
        """
        kind = self._codec.kind
        where = f"{verb} {kind!r}"
        keyed = self.flow != (None, None) or not FLOW_OPTIONS.isdisjoint(overrides)
        overrides, labelled, payloads = *split_labels(overrides), list(payloads)
        overrides, debounce = split_debounce(overrides)
        if keyed:
            given = {k: v for k, v in overrides.items() if k in FLOW_OPTIONS}
            overrides = cast(EnqueueOptions, {k: v for k, v in overrides.items() if k not in given})
        if overrides:
            options, unique, run_at = self._overridden(where, cast(EnqueueOptions, overrides))
        else:
            options, unique, run_at = self.options, self.unique, None
        if debounce is not None:
            debounce = check_debounce(where, debounce, self._codec, unique, overrides)
        moment = binding.store.clock() if named is None else named.at
        starts = options.run_at(where, moment, run_at)
        limit, keys = binding.max_payload_bytes, binding.store.secret_keys
        made = None if named is None else iter(named.ids)
        encode = self._codec.encode_payload
        jobs = [
            NewJob(
                new_id() if made is None else next(made),
                "null" if fed else encode(p, limit, keys),
                starts,
                options.queue,
                options.priority,
                options.max_attempts,
                options.timeout,
                traceparent,
            )
            for p in payloads
        ]
        if keyed:
            jobs = with_flow(where, jobs, payloads, self.flow, given, fed)
        jobs = self.labels.apply(where, jobs, payloads, labelled, binding.store._enqueue_hooks)
        # A job that starts now has run_at and created_at the same text: one timestamp for both.
        now = starts if run_at is None and options.delay is None else timestamp(moment)
        if debounce is not None:
            return debounced(kind, where, debounce, jobs, moment)
        if unique is None:
            return jobs, create_jobs(kind, jobs, now)
        jobs = keyed_unique(where, unique, jobs, moment)
        return jobs, create_unique_jobs(kind, jobs, now)

    def check_options(
        self, where: str, options: Mapping[str, object], allowed: frozenset[str]
    ) -> None:
        """Raises TypeError or ValueError, naming where and the option, for one no job could take.

        Checks each value as an enqueue would, without building a job or running a
        hook: for what is declared long before its jobs.

        Args:
            where: What the message names as the caller.
            options: The options to check, as an enqueue takes them.
            allowed: The names the caller takes (an option outside them is unknown).

        Raises:
            TypeError: An unknown option, or a value of the wrong type.
            ValueError: A bad value.
        """
        if unknown := sorted(options.keys() - allowed):
            if "debounce" in unknown:
                raise TypeError(
                    f"{where}: debounce is an enqueue's option (Kind.enqueue): a job of a "
                    "workflow or of a schedule is never debounced"
                )
            raise TypeError(f"{where}: unknown option {unknown[0]!r}")
        overrides, labelled = split_labels(dict(options))
        for name in FLOW_OPTIONS & overrides.keys():
            if (key := overrides.pop(name)) is not None:
                check_key(where, name.removesuffix("_key"), key)
        if overrides:
            self._overridden(where, cast(EnqueueOptions, overrides))
        if labelled.get("tags") is not None:
            check_tags(where, labelled["tags"])
        self.labels.meta.plain(where, labelled.get("meta"))

    def fed_keys(self, where: str, given: Mapping[str, object]) -> None:
        """Raises ValueError naming where when a fed job's keys could not be computed.

        A fed job's payload is its dependency's result, unknown until that
        succeeds: a ``Partition`` or ``Sequence`` by a payload field gets its key
        from the result when the job is fed (and the job joins its sequence
        then), but a key function would have to run in the process that
        enqueued it. Such a key is given instead (``partition_key=``,
        ``sequence_key=``).

        Args:
            where: What the message names as the caller.
            given: The flow options the enqueue gave.

        Raises:
            ValueError: The kind computes a key with a function of the payload and
                given lacks it.
        """
        partition, sequence = self.flow
        fed_field(where, "partition", partition and partition.by, given.get("partition_key"))
        fed_field(where, "sequence", sequence and sequence.by, given.get("sequence_key"))

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

        A job waits in the table until a runner with a handler for the kind claims
        it, no earlier than its run_at. With ``conn=``, the application's own
        connection (sqlite3, psycopg, or a SQLAlchemy Connection or Session over
        one), the job joins its transaction instead: it exists if and only if that
        commits, and the commit wakes the runners; the store's durable setting does
        not apply.

        Args:
            *args: The store and the payload, a P (a bound kind takes the payload
                alone).
            **options: Override the kind's options for this job: max_attempts,
                priority, queue, timeout, delay or run_at, unique, partition_key,
                sequence_key, tags, meta; and conn, the application's connection
                whose transaction the job joins.

        Returns:
            The job's id.

        Raises:
            PayloadError: The payload is not a P, cannot be encoded, or is over the
                size limit (the store's, or the runner's for a bound kind); nothing
                is stored.
            TypeError: A bad option, named; or a conn that cannot reach the store's
                jobs table (the wrong driver, or an async one: use aenqueue).
            ValueError: A bad option value, named; or a conn to another database or
                file, or with a search_path without the store's schema.
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

        Either every job is stored or, on any error, none is.

        Args:
            *args: The store and the payloads, an iterable of P (a bound kind takes
                the payloads alone).
            **options: Apply to every job, as in enqueue.

        Returns:
            The jobs' ids, in the payloads' order.

        Raises:
            PayloadError: A payload is not a P, cannot be encoded, or is too large;
                nothing is stored.
            TypeError: A bad option, named; nothing is stored.
            ValueError: A bad option value, named; nothing is stored.
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

        Args:
            *args: The store and the payload, a P (a bound kind takes the payload
                alone).
            **options: Override the kind's options for this job: max_attempts,
                priority, queue, timeout, delay or run_at, unique, partition_key,
                sequence_key, tags, meta, debounce; and conn, the application's connection
                whose transaction the job joins.

        Returns:
            The job's id and whether it was a duplicate: True when a job of the kind
            held the unique key, so that nothing was stored and the id is the
            holder's; debounced (``debounce=``, see ``Debounce``), True when the
            key's pending job took the enqueue (its run time moved, its payload
            replaced unless the first is kept) and the id is that job's. Without
            either it is False.

        Raises:
            PayloadError: As enqueue raises it.
            TypeError: As enqueue raises it.
            ValueError: As enqueue raises it.
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

        Args:
            *args: The store and the payloads (a bound kind takes the payloads
                alone).
            **options: Apply to every job, as in enqueue.

        Returns:
            An EnqueueResult per payload, in order.

        Raises:
            PayloadError: As enqueue_many raises it.
            TypeError: As enqueue_many raises it.
            ValueError: As enqueue_many raises it.
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
        binding: Binding,
        payloads: Iterable[P],
        options: EnqueueOptions,
        named: Named | None = None,
    ) -> Stored:
        """Stores a job per payload through the one enqueue path (see ``store_jobs``).

        named, when given, holds the jobs' ids and their enqueue time (the
        Django backend names a job before its transaction commits); by
        default each gets a new id, and the time is the store clock's.
        """
        conn = options.pop("conn", None)
        return store_jobs(
            binding,
            self.name,
            verb,
            lambda traceparent: self._create(verb, binding, payloads, options, traceparent, named),
            conn,
        )

    async def _aenqueue_many(
        self,
        verb: str,
        binding: Binding,
        payloads: Iterable[P],
        options: EnqueueOptions,
        named: Named | None = None,
    ) -> Stored:
        """The async form of _enqueue_many."""
        conn = options.pop("conn", None)
        return await astore_jobs(
            binding,
            self.name,
            verb,
            lambda traceparent: self._create(verb, binding, payloads, options, traceparent, named),
            conn,
        )

    @overload
    def get(self, store: Store, job_id: str, /) -> Job[R]: ...
    @overload
    def get(self, job_id: str, /) -> Job[R]: ...
    def get(self, *args: Any) -> Job[R]:
        """Returns the job with its result parsed as R.

        Args:
            *args: The store and the job's id (a bound kind takes the id alone).

        Returns:
            The job, its result an R (or None before it has one).

        Raises:
            JobNotFound: No job has the id, or the job is of another kind.
            TypeError: The id is not a str.
            ResultError: The stored result no longer validates as R (naming the job
                and the kind).
            SecretKeyError: A secret of the result that the store cannot decrypt
                (naming the key id).
        """
        binding, job_id = self._where("get", args)
        return self._typed(binding.store, binding.store.engine.read(GetJob(job_id)))

    @overload
    async def aget(self, store: Store, job_id: str, /) -> Job[R]: ...
    @overload
    async def aget(self, job_id: str, /) -> Job[R]: ...
    async def aget(self, *args: Any) -> Job[R]:
        """The async form of get."""
        binding, job_id = self._where("get", args)
        return self._typed(binding.store, await binding.store.engine.aread(GetJob(job_id)))
