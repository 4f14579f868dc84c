"""Workflows: jobs with dependencies, stored in one transaction, made ready by the database.

``Workflow.add`` returns a typed ``Node``; a node's result may be a later
node's payload, and mypy checks that wiring through ``add``'s overloads. A
job with dependencies is stored pending, which no claim reads; the
transaction that records a dependency's end settles its dependents
(``jobtable._engines.dependencies``).
"""

import dataclasses
import datetime
from collections.abc import Iterable, Sequence
from typing import Any, Generic, Literal, TypeVar, overload

from typing_extensions import Unpack

from jobtable._engines.base import Queries
from jobtable._engines.dependencies import settle_dependents
from jobtable._engines.rows import NewJob
from jobtable._engines.workflow_queries import JobDep, WorkflowJob, WorkflowQueries
from jobtable._enqueue import Binding, Named, astore_jobs, store_jobs
from jobtable._kind import Kind
from jobtable._options import JobOptions, Options
from jobtable._store import Store
from jobtable._telemetry import current_traceparent
from jobtable._transaction import in_transaction
from jobtable._values import new_id, timestamp, unstorable

P = TypeVar("P")
R = TypeVar("R")
P_co = TypeVar("P_co", covariant=True)
R_co = TypeVar("R_co", covariant=True)


class Node(Generic[P_co, R_co]):
    """A job of a workflow, as ``Workflow.add`` returns it: its kind's payload and result types.

    ``id`` is the job's id, known before the workflow is stored. A node is
    a dependency of later nodes (``after=``), and the payload of one whose
    kind takes its result type. ``Workflow.add`` makes it.

    Args:
        workflow: The workflow the node belongs to.
        kind: The job's kind's name.
        job_id: The job's id.
        result_type: The kind's result type, None when unknown (the running
            job, to ``ctx.workflow``).
    """

    __slots__ = ("_kind", "_result_type", "id", "workflow")

    def __init__(
        self, workflow: "Workflow", kind: str, job_id: str, result_type: object = None
    ) -> None:
        self.workflow = workflow
        """The workflow the node belongs to."""
        self.id = job_id
        """The job's id."""
        self._kind = kind
        self._result_type = result_type

    def __repr__(self) -> str:
        return f"Node({self._kind!r}, {self.id!r})"


@dataclasses.dataclass(frozen=True)
class After:
    """A dependency with its failure policy: ``after=[After(node, on_failure="run")]``.

    Args:
        node: The dependency.
        on_failure: ``"cancel"`` (the default, and what a bare node means)
            cancels the dependent when node ends failed or cancelled;
            ``"run"`` runs it once node ended in any way (a clean-up step, a
            batch's callback).
    """

    node: Node[Any, Any]
    on_failure: Literal["cancel", "run"] = "cancel"


_Dependency = Node[Any, Any] | After


@dataclasses.dataclass(frozen=True)
class _Step:
    """One added job: its kind, payload (a Node when fed), dependencies and options."""

    node: Node[Any, Any]
    kind: Kind[Any, Any]
    payload: Any
    after: tuple[After, ...]
    options: JobOptions


class Workflow:
    """A named set of jobs with dependencies, stored together by ``enqueue``.

    ``add(kind, payload, after=[...])`` adds a job that runs only once every
    node of after succeeded; ``add(kind, node)`` makes node's result the
    job's payload (and node a dependency). A dependency that ends failed or
    cancelled cancels its dependents, transitively, each recording why,
    unless the dependent opted in with ``After(node, on_failure="run")``.
    Nodes can only depend on nodes added before them, so a workflow has no
    cycle. ``enqueue(store)`` stores every job in one transaction and
    returns the workflow's id; ``Store.cancel_workflow`` cancels it.

    Args:
        name: The workflow's name, as its jobs' records show it.
        priority: The priority of each of its jobs that ``add`` gives none
            (``priority=``): it replaces the kind's declared one. None keeps
            each kind's.
        deadline: When the runners' maintenance cancels the workflow's
            unfinished jobs, as ``Store.cancel_workflow`` does: an aware
            datetime, or a timedelta from its enqueue (by the store's clock).
            None: never.
        concurrency: The most workflows of this name unfinished at once (a
            workflow is unfinished while one of its jobs is pending, queued
            or running). One enqueued beyond it waits, its jobs pending, and
            is admitted, oldest first, when one of the name ends (every job
            ended or deleted: succeeded, failed, cancelled, its deadline
            passed). Each workflow carries its own limit; None: no limit.

    Raises:
        ValueError: name is empty, not a str, or cannot be stored; priority
            does not fit in 32 bits; deadline is a naive datetime or a
            timedelta that is not positive; concurrency is below 1 or does
            not fit in 32 bits.
        TypeError: priority is not an int, deadline not a datetime or
            timedelta, or concurrency not an int.
    """

    def __init__(
        self,
        name: str,
        *,
        priority: int | None = None,
        deadline: datetime.datetime | datetime.timedelta | None = None,
        concurrency: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name or unstorable(name):
            raise ValueError(f"Workflow {name!r}: want a non-empty name that can be stored")
        if priority is not None:
            Options(priority=priority).check(f"Workflow {name!r}")
        _check_deadline(f"Workflow {name!r}", deadline)
        _check_concurrency(f"Workflow {name!r}", concurrency)
        self.concurrency = concurrency
        """The most workflows of this name unfinished at once, or None: no limit."""
        self.priority = priority
        """The priority of each job ``add`` gives none, or None: each kind's."""
        self.deadline = deadline
        """When the workflow's unfinished jobs are cancelled, or None: never."""
        self.name = name
        """The workflow's name, as its jobs' records show it."""
        self.id = new_id()
        """The workflow's id, as its jobs' records hold it."""
        self._steps: list[_Step] = []
        self._nodes: dict[str, Node[Any, Any]] = {}
        self._stored = False
        self._in_conn: object = None

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, {self.id!r})"

    @property
    def nodes(self) -> list[Node[Any, Any]]:
        """The nodes added so far, in order."""
        return [step.node for step in self._steps]

    @overload
    def add(
        self,
        kind: Kind[P, R],
        payload: Node[Any, P],
        /,
        *,
        after: Iterable[_Dependency] = (),
        **options: Unpack[JobOptions],
    ) -> Node[P, R]: ...
    @overload
    def add(
        self,
        kind: Kind[P, R],
        payload: P,
        /,
        *,
        after: Iterable[_Dependency] = (),
        **options: Unpack[JobOptions],
    ) -> Node[P, R]: ...
    def add(
        self,
        kind: Kind[Any, Any],
        payload: Any,
        /,
        *,
        after: Iterable[_Dependency] = (),
        **options: Unpack[JobOptions],
    ) -> Node[Any, Any]:
        """Adds a job of kind and returns its node; payload may be a node whose result it takes.

        The options are applied with the kind's declarations as an enqueue's are, a
        fed node's too. A payload is checked against kind when the workflow is
        stored. A fed node whose kind keys it by a payload field (``Partition``,
        ``Sequence``) gets its key from its dependency's result when that feeds
        it, and joins its sequence then.

        Args:
            kind: The job's kind; not a unique one.
            payload: The job's payload, a P; or a node whose result, a P, becomes
                the payload once it succeeds (and which is then a dependency).
            after: The nodes (or ``After``) the job runs after, added to this
                workflow before it.
            **options: The job's options (``JobOptions``: an enqueue's but
                ``unique`` and ``conn``).

        Returns:
            The job's node, to depend on or to feed later jobs.

        Raises:
            TypeError: kind is not a Kind, a dependency is not a Node or After, or
                a fed node's result type is not kind's payload type.
            ValueError: A dependency of another workflow or not added to this one
                (naming it), a fed node of a kind whose key is a function of its payload
                (give ``partition_key=`` or ``sequence_key=``), a unique kind or
                ``conn=``, a bad option, or the workflow was stored already.
        """
        where = f"Workflow {self.name!r}: add {getattr(kind, 'name', kind)!r}"
        if self._stored:
            raise ValueError(f"{where}: the workflow was stored already")
        if not isinstance(kind, Kind):
            raise TypeError(f"{where}: want a Kind, got {type(kind).__name__}")
        if "unique" in options or "conn" in options or kind.unique is not None:
            raise ValueError(f"{where}: a workflow's job cannot be unique or take conn")
        kind.check_options(where, options, JobOptions.__optional_keys__)
        if self.priority is not None and "priority" not in options:
            options["priority"] = self.priority
        deps = [self._dependency(where, d) for d in after]
        if isinstance(payload, Node):
            deps.insert(0, self._dependency(where, payload))
            _check_feed(where, payload, kind)
            if not self._fed_when_stored(payload):
                kind.fed_keys(where, options)
        unique_deps: dict[str, After] = {}
        for dep in deps:
            unique_deps.setdefault(dep.node.id, dep)
        node: Node[Any, Any] = Node(self, kind.name, new_id(), kind._codec.result_type)
        self._steps.append(_Step(node, kind, payload, tuple(unique_deps.values()), options))
        self._nodes[node.id] = node
        self._added()
        return node

    def _added(self) -> None:
        """Called once a step was added: a workflow checks its payloads when it is stored."""

    def _fed_when_stored(self, node: Node[Any, Any]) -> bool:
        """Whether node's result is known when the jobs it feeds are stored: then they hold it."""
        return False

    def _dependency(self, where: str, dep: object) -> After:
        """dep as an After, checked: a node added to this workflow."""
        after = dep if isinstance(dep, After) else After(dep) if isinstance(dep, Node) else None
        if after is None or not isinstance(after.node, Node):
            raise TypeError(f"{where}: a dependency must be a Node or After, got {dep!r}")
        if not self._owns(after.node.workflow):
            raise ValueError(
                f"{where}: {after.node!r} belongs to another workflow "
                f"({after.node.workflow.name!r}), not this one"
            )
        if not self._has(after.node):
            raise ValueError(f"{where}: {after.node!r} was not added to this workflow")
        if after.on_failure not in ("cancel", "run"):
            raise ValueError(f"{where}: on_failure must be 'cancel' or 'run'")
        return after

    def _has(self, node: Node[Any, Any]) -> bool:
        """Whether node was added to this workflow."""
        return self._nodes.get(node.id) is node

    def _owns(self, workflow: "Workflow") -> bool:
        """Whether a node of workflow may be a dependency here: this one's."""
        return workflow is self

    def _encoded(
        self, step: _Step, binding: Binding, traceparent: str | None, moment: datetime.datetime
    ) -> "_NewStep":
        """step's job, its payload encoded: raises PayloadError, TypeError or ValueError."""
        fed = isinstance(step.payload, Node)
        named = Named([step.node.id], moment)
        kind, options, verb = step.kind, JobOptions(**step.options), f"workflow {self.name!r}"
        # The one path of every job; a fed job holds JSON null until its
        # dependency's result, stored when that succeeds, replaces it.
        [job], _ = kind._create(verb, binding, [step.payload], options, traceparent, named, fed)
        return kind.name, job, step.after, fed

    def _jobs(self, binding: Binding, traceparent: str | None) -> "StoreWorkflow":
        """Encodes every job (raising before anything is stored) into the write that stores them."""
        moment = binding.store.clock()
        jobs = [self._encoded(step, binding, traceparent, moment) for step in self._steps]
        deadline = self.deadline
        if isinstance(deadline, datetime.timedelta):
            deadline = moment + deadline
        due = None if deadline is None else timestamp(deadline)
        at, limit = timestamp(moment), self.concurrency
        return StoreWorkflow(self.id, self.name, jobs, at, deadline_at=due, concurrency=limit)

    def enqueue(self, store: Store, *, conn: object = None) -> str:
        """Stores every job of the workflow in one transaction and returns the workflow's id.

        Either every job is stored or none is. A workflow is stored once. With
        ``conn=``, the jobs join its transaction as ``Kind.enqueue``'s do: they
        exist if and only if it commits, and a workflow whose transaction rolled
        back can be enqueued again.

        Args:
            store: The store to enqueue into.
            conn: The application's own connection, whose transaction the jobs
                join; None uses the store's.

        Returns:
            The workflow's id.

        Raises:
            PayloadError: A payload does not fit its kind; nothing is stored.
            TypeError: store is not a Store, or a bad option; nothing is stored.
            ValueError: A bad option, an empty workflow, or a workflow stored
                already; nothing is stored.
        """
        binding = self._binding(store, conn)
        if self._stored and store.engine.read(self._exists):
            raise ValueError(self._stored_already())
        write = lambda tp: self._write(binding, tp)  # noqa: E731
        store_jobs(binding, self.name, "enqueue", write, conn, (self.id, self.name))
        self._stored, self._in_conn = True, conn
        return self.id

    async def aenqueue(self, store: Store, *, conn: object = None) -> str:
        """The async form of enqueue."""
        binding = self._binding(store, conn)
        if self._stored and await store.engine.aread(self._exists):
            raise ValueError(self._stored_already())
        write = lambda tp: self._write(binding, tp)  # noqa: E731
        await astore_jobs(binding, self.name, "enqueue", write, conn, (self.id, self.name))
        self._stored, self._in_conn = True, conn
        return self.id

    def _binding(self, store: Store, conn: object) -> Binding:
        """The store's binding; raises unless the workflow may be stored there (again).

        A workflow stored in an application's transaction may be stored again
        once that rolled back; not in the store's own transaction while it is
        open, which would wait for it.
        """
        if not isinstance(store, Store):
            raise TypeError(f"Workflow {self.name!r}: want a Store, got {type(store).__name__}")
        if self._stored and self._in_conn is None:
            raise ValueError(self._stored_already())
        if self._stored and conn is None and in_transaction(self._in_conn):
            raise ValueError(
                f"Workflow {self.name!r}: the workflow was enqueued in conn's transaction, "
                "which is still open: commit it, or roll it back and enqueue again"
            )
        if not self._steps:
            raise ValueError(f"Workflow {self.name!r}: the workflow has no job")
        return Binding(store, store.max_payload_bytes)

    def _exists(self, q: Queries) -> bool:
        """Whether the workflow is in the store: an enqueue in conn's transaction committed."""
        return q.workflow_name(id=self.id) is not None

    def _stored_already(self) -> str:
        return (
            f"Workflow {self.name!r}: the workflow {self.id} was stored already; "
            "build a new Workflow to store these jobs again"
        )

    def _write(self, binding: Binding, traceparent: str | None) -> Any:
        op = self._jobs(binding, traceparent)
        return [job for _, job, _, _ in op.jobs], op


def _check_deadline(where: str, deadline: object) -> None:
    """Raises naming where unless deadline is None, an aware datetime or a positive timedelta."""
    if deadline is None:
        return
    if isinstance(deadline, datetime.datetime):
        if deadline.tzinfo is None or deadline.utcoffset() is None:
            raise ValueError(f"{where}: deadline must be an aware datetime, got {deadline!r}")
        return
    if isinstance(deadline, datetime.timedelta):
        if deadline <= datetime.timedelta(0):
            raise ValueError(f"{where}: deadline must be a positive timedelta, got {deadline!r}")
        return
    raise TypeError(
        f"{where}: deadline must be a datetime, a timedelta or None, got {type(deadline).__name__}"
    )


def _check_concurrency(where: str, concurrency: object) -> None:
    """Raises naming where unless concurrency is None or an int from 1 that fits in 32 bits."""
    if concurrency is None:
        return
    if not isinstance(concurrency, int) or isinstance(concurrency, bool):
        raise TypeError(
            f"{where}: concurrency must be an int or None, got {type(concurrency).__name__}"
        )
    if not 1 <= concurrency <= 2**31 - 1:
        raise ValueError(f"{where}: concurrency must be from 1 to 2**31 - 1, got {concurrency!r}")


def _check_feed(where: str, node: Node[Any, Any], kind: Kind[Any, Any]) -> None:
    """Raises TypeError naming where unless node's result type is kind's payload type.

    The fed payload is the node's stored result, so a type that differs (a
    subclass too: its extra fields are refused in a payload) could never
    validate as kind's payload; a node whose result type is unknown (the
    running job, to ``ctx.workflow``) is checked when its result feeds.
    """
    result_type, payload_type = node._result_type, kind._codec.payload_type
    if result_type is None or result_type == payload_type:
        return
    raise TypeError(
        f"{where}: {node!r} returns {_type_name(result_type)}, not the payload type of "
        f"{kind.name!r} ({_type_name(payload_type)}); feed it a node whose kind returns "
        f"{_type_name(payload_type)}, or give a payload and after=[node]"
    )


def _type_name(value: object) -> str:
    return value.__qualname__ if isinstance(value, type) else repr(value)


_NewStep = tuple[str, NewJob, tuple[After, ...], bool]
"""A job to store: its kind's name, the job, its dependencies, and whether the first feeds it."""


class StoreWorkflow:
    """The write that stores a workflow's jobs and dependencies, in one transaction.

    A job with dependencies is stored pending, one without queued. With
    create False the workflow exists already (a running job's additions).
    A workflow with a concurrency limit that must wait for a slot has every
    job pending, counting the slot as one more dependency until admitted.
    """

    __slots__ = ("concurrency", "create", "deadline_at", "jobs", "name", "now", "workflow_id")

    def __init__(
        self,
        workflow_id: str,
        name: str,
        jobs: Sequence[_NewStep],
        now: str,
        create: bool = True,
        deadline_at: str | None = None,
        concurrency: int | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        self.concurrency = concurrency
        self.name = name
        self.jobs = jobs
        self.now = now
        self.create = create
        self.deadline_at = deadline_at

    def __call__(self, q: WorkflowQueries) -> None:
        slot = None
        if self.create:
            slot = q.create_workflow(
                id=self.workflow_id,
                name=self.name,
                now=self.now,
                deadline_at=self.deadline_at,
                concurrency=self.concurrency,
            )
        waits = int(slot == "waiting")
        q.insert_workflow_jobs(
            workflow_id=self.workflow_id,
            jobs=[WorkflowJob(kind, job, len(after) + waits) for kind, job, after, _ in self.jobs],
            now=self.now,
        )
        q.create_job_deps(
            deps=[
                JobDep(dep.node.id, job.id, dep.on_failure == "run", fed and i == 0)
                for _, job, after, fed in self.jobs
                for i, dep in enumerate(after)
            ]
        )


class FanOut(Workflow):
    """The running job's workflow, as its handler adds jobs to it: ``ctx.workflow``.

    ``add`` works as ``Workflow.add``; a dependency is a node added here or
    ``current``, the running job itself (``add(kind, ctx.workflow.current)``
    feeds it its result). Each payload is checked as it is added. The jobs
    are stored in the transaction that records the running job's success,
    and only then: a failure, retry or cancel of the attempt drops them. A
    job fed by ``current`` is made when the handler returned (``feed``),
    with the result as its payload: its kind's keys come from it, as an
    enqueue's do. A success whose cancel was requested while the job ran (a cancel of the
    job, or of its workflow) stores them cancelled: they never run.
    """

    def __init__(
        self, workflow_id: str, job: str, kind: str, store: Store, result_type: object = None
    ) -> None:
        super().__init__("fan-out")
        self.id = workflow_id
        self.current: Node[Any, Any] = Node(self, kind, job, result_type)
        """The running job, as a dependency of the jobs it adds."""
        self._binding_ = Binding(store, store.max_payload_bytes)
        self._new: list[_NewStep | _Step] = []
        self._included: list[Workflow] = []
        self._heir: Node[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"FanOut({self.id!r}, {self.current!r})"

    def _has(self, node: Node[Any, Any]) -> bool:
        return node is self.current or super()._has(node)

    def _fed_when_stored(self, node: Node[Any, Any]) -> bool:
        return node is self.current

    def _owns(self, workflow: Workflow) -> bool:
        return workflow is self or any(workflow is sub for sub in self._included)

    def add_workflow(self, sub: Workflow, *, result: Node[Any, Any] | None = None) -> None:
        """Adds every job of sub, in sub's order, to the running job's workflow, as ``add`` would.

        The jobs join this workflow (sub's name and id are not stored) and
        are stored with the running job's success, and only then, as every
        job added here; sub's nodes are then nodes of this workflow, to
        depend on or to feed later jobs (``add(kind, node)``). sub is spent:
        it cannot be enqueued or added again. With result, the running job's
        dependents not yet started wait for result too (a job the running
        job feeds takes result's result as its payload instead): the running
        job finishes, and its dependents wait for the sub-workflow, holding
        no worker meanwhile. ``JobContext.add_workflow`` is its typed form.

        Args:
            sub: The workflow to add, built with ``Workflow.add`` and not stored.
            result: A node of sub (or one added here) whose result the running
                job's dependents take in place of the running job's; None
                leaves them as they are.

        Raises:
            TypeError: sub is not a Workflow, result not a Node, or result's
                result type is not the running job's.
            ValueError: sub was stored or added already, has no job, or has a
                deadline or a concurrency limit; result is not a node of sub or
                of this workflow, or an earlier add_workflow gave result already.
            PayloadError: A job of sub does not fit its kind; nothing of sub is added.
        """
        where = f"Workflow {self.name!r}: add_workflow {getattr(sub, 'name', sub)!r}"
        if not isinstance(sub, Workflow) or isinstance(sub, FanOut):
            raise TypeError(f"{where}: want a Workflow, got {type(sub).__name__}")
        if sub._stored or not sub._steps:
            raise ValueError(f"{where}: want a workflow with jobs, not stored or added already")
        if sub.deadline is not None:
            raise ValueError(
                f"{where}: its jobs join this workflow, whose deadline is theirs; "
                "give the sub-workflow no deadline"
            )
        if sub.concurrency is not None:
            raise ValueError(
                f"{where}: its jobs join this workflow, which holds its slot for them; "
                "give the sub-workflow no concurrency limit"
            )
        if result is not None:
            self._check_heir(where, sub, result)
        start, made = len(self._steps), len(self._new)
        self._included.append(sub)
        try:
            for step in sub._steps:
                self._steps.append(step)
                self._nodes[step.node.id] = step.node
                self._added()
        except BaseException:
            for step in self._steps[start:]:
                self._nodes.pop(step.node.id, None)
            del self._steps[start:], self._new[made:], self._included[-1]
            raise
        sub._stored = True
        if result is not None:
            self._heir = result

    def _check_heir(self, where: str, sub: Workflow, node: object) -> None:
        """Raises unless node may take the running job's place for its dependents."""
        if not isinstance(node, Node):
            raise TypeError(f"{where}: result must be a Node, got {type(node).__name__}")
        if self._heir is not None:
            raise ValueError(
                f"{where}: the running job's dependents take {self._heir!r}'s result already; "
                "give result= to one add_workflow only"
            )
        if node is self.current or not (sub._has(node) or self._has(node)):
            raise ValueError(f"{where}: result {node!r} is not a node of {sub!r} or added here")
        ours, theirs = self.current._result_type, node._result_type
        if ours is not None and theirs is not None and ours != theirs:
            raise TypeError(
                f"{where}: result {node!r} returns {_type_name(theirs)}, not the running "
                f"job's result type ({_type_name(ours)}), which its dependents take"
            )

    def _added(self) -> None:
        if self._steps[-1].payload is self.current:
            self._new.append(self._steps[-1])  # made by feed, once the result is known
            return
        # Checked at once, so the handler gets the error where it added the job.
        try:
            moment = self._binding_.store.clock()
            # The running job's trace context: the added job's run continues its run's trace.
            traceparent = current_traceparent(self._binding_.store)
            step = self._encoded(self._steps[-1], self._binding_, traceparent, moment)
            self._new.append(step)
        except BaseException:
            del self._nodes[self._steps.pop().node.id]
            raise

    def feed(self, result: object) -> None:
        """Makes the jobs fed by ``current`` with result as their payload, as an enqueue would.

        Called once the handler returned result, before its success is
        written. Raises as ``Kind.enqueue`` does for a payload, key or hook
        that refuses it: the attempt then fails, and nothing it added is stored.
        """
        moment = self._binding_.store.clock()
        traceparent = current_traceparent(self._binding_.store)
        for i, step in enumerate(self._new):
            if isinstance(step, _Step):
                named = Named([step.node.id], moment)
                options, verb = JobOptions(**step.options), f"workflow {self.name!r}"
                [job], _ = step.kind._create(
                    verb, self._binding_, [result], options, traceparent, named
                )
                self._new[i] = (step.kind.name, job, step.after, False)

    def __call__(self, q: WorkflowQueries) -> None:
        """Stores the added jobs: run by the write that records the running job's success."""
        now = timestamp(self._binding_.store.clock())
        made = self._made()
        StoreWorkflow(self.id, self.name, made, now, create=False)(q)
        # The running job may have been its limited workflow's last: its
        # success freed the slot, which the added jobs hold again.
        q.retake_workflow_slot(id=self.id)
        if self._heir is not None:
            ids = [job.id for _, job, _, _ in made]
            q.hand_over_dependents(job=self.current.id, heir=self._heir.id, ids=ids, now=now)

    def cancel_if_requested(self, q: WorkflowQueries) -> None:
        """Cancels the added jobs, just stored, if the running job's cancel was requested.

        Run after the running job's dependents were settled, so that a job
        it feeds holds its result, as a retry of that job will need.
        """
        now = timestamp(self._binding_.store.clock())
        ids = [job.id for _, job, _, _ in self._made()]
        if q.cancel_added_jobs(ids=ids, adder=self.current.id, now=now) and self._heir is not None:
            # The dependents handed over to a cancelled heir settle as its dependents.
            settle_dependents(q, self._heir.id, now)

    def _made(self) -> list[_NewStep]:
        """The added jobs already made: all of them once ``feed`` has run."""
        return [step for step in self._new if not isinstance(step, _Step)]
