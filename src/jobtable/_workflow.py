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

from jobtable._engines.rows import NewJob
from jobtable._engines.workflow_queries import JobDep, WorkflowJob, WorkflowQueries
from jobtable._enqueue import Binding, Named, astore_jobs, store_jobs
from jobtable._kind import Kind
from jobtable._options import EnqueueOptions
from jobtable._store import Store
from jobtable._telemetry import current_traceparent
from jobtable._values import new_id, timestamp, unstorable

P = TypeVar("P")
R = TypeVar("R")
P_co = TypeVar("P_co", covariant=True)
R_co = TypeVar("R_co", covariant=True)


class Node(Generic[P_co, R_co]):
    """A job of a workflow, as ``Workflow.add`` returns it: its kind's payload and result types.

    ``id`` is the job's id, known before the workflow is stored. A node is
    a dependency of later nodes (``after=``), and the payload of one whose
    kind takes its result type.
    """

    __slots__ = ("_kind", "id", "workflow")

    def __init__(self, workflow: "Workflow", kind: str, job_id: str) -> None:
        self.workflow = workflow
        """The workflow the node belongs to."""
        self.id = job_id
        """The job's id."""
        self._kind = kind

    def __repr__(self) -> str:
        return f"Node({self._kind!r}, {self.id!r})"


@dataclasses.dataclass(frozen=True)
class After:
    """A dependency with its failure policy: ``after=[After(node, on_failure="run")]``.

    on_failure ``"cancel"`` (the default, and what a bare node means) cancels
    the dependent when node ends failed or cancelled; ``"run"`` runs it once
    node ended in any way (a clean-up step, a batch's callback).
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
    options: EnqueueOptions


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
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name or unstorable(name):
            raise ValueError(f"Workflow {name!r}: want a non-empty name that can be stored")
        self.name = name
        """The workflow's name, as its jobs' records show it."""
        self.id = new_id()
        """The workflow's id, as its jobs' records hold it."""
        self._steps: list[_Step] = []
        self._nodes: dict[str, Node[Any, Any]] = {}
        self._stored = False

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
        **options: Unpack[EnqueueOptions],
    ) -> Node[P, R]: ...
    @overload
    def add(
        self,
        kind: Kind[P, R],
        payload: P,
        /,
        *,
        after: Iterable[_Dependency] = (),
        **options: Unpack[EnqueueOptions],
    ) -> Node[P, R]: ...
    def add(
        self,
        kind: Kind[Any, Any],
        payload: Any,
        /,
        *,
        after: Iterable[_Dependency] = (),
        **options: Unpack[EnqueueOptions],
    ) -> Node[Any, Any]:
        """Adds a job of kind and returns its node; payload may be a node whose result it takes.

        options are an enqueue's (see ``Kind.enqueue``) but for ``unique``
        and ``conn``. Raises ValueError naming the node for a dependency of
        another workflow or one not added to this one, TypeError for one
        that is not a Node or After, and ValueError once the workflow was
        stored. The payload is checked against kind when stored.
        """
        where = f"Workflow {self.name!r}: add {getattr(kind, 'name', kind)!r}"
        if self._stored:
            raise ValueError(f"{where}: the workflow was stored already")
        if not isinstance(kind, Kind):
            raise TypeError(f"{where}: want a Kind, got {type(kind).__name__}")
        if "unique" in options or "conn" in options or kind.unique is not None:
            raise ValueError(f"{where}: a workflow's job cannot be unique or take conn")
        deps = [self._dependency(where, d) for d in after]
        if isinstance(payload, Node):
            deps.insert(0, self._dependency(where, payload))
        unique_deps: dict[str, After] = {}
        for dep in deps:
            unique_deps.setdefault(dep.node.id, dep)
        node: Node[Any, Any] = Node(self, kind.name, new_id())
        self._steps.append(_Step(node, kind, payload, tuple(unique_deps.values()), options))
        self._nodes[node.id] = node
        self._added()
        return node

    def _added(self) -> None:
        """Called once a step was added: a workflow checks its payloads when it is stored."""

    def _dependency(self, where: str, dep: object) -> After:
        """dep as an After, checked: a node added to this workflow."""
        after = dep if isinstance(dep, After) else After(dep) if isinstance(dep, Node) else None
        if after is None or not isinstance(after.node, Node):
            raise TypeError(f"{where}: a dependency must be a Node or After, got {dep!r}")
        if after.node.workflow is not self:
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

    def _encoded(
        self, step: _Step, binding: Binding, traceparent: str | None, moment: datetime.datetime
    ) -> "_NewStep":
        """step's job, its payload encoded: raises PayloadError, TypeError or ValueError."""
        fed = isinstance(step.payload, Node)
        named = Named([step.node.id], moment)
        kind = step.kind
        if fed:
            # A fed job's payload is its dependency's result, stored when that
            # succeeds: until then it holds JSON null.
            [job] = _placeholder(kind, binding, step.options, traceparent, named)
        else:
            options = EnqueueOptions(**step.options)
            verb = f"workflow {self.name!r}"
            [job], _ = kind._create(verb, binding, [step.payload], options, traceparent, named)
        return kind.name, job, step.after, fed

    def _jobs(self, binding: Binding, traceparent: str | None) -> "StoreWorkflow":
        """Encodes every job (raising before anything is stored) into the write that stores them."""
        moment = binding.store.clock()
        jobs = [self._encoded(step, binding, traceparent, moment) for step in self._steps]
        return StoreWorkflow(self.id, self.name, jobs, timestamp(moment))

    def enqueue(self, store: Store, *, conn: object = None) -> str:
        """Stores every job of the workflow in one transaction and returns the workflow's id.

        Raises PayloadError (a payload that does not fit its kind), TypeError
        or ValueError (a bad option) before anything is stored; either every
        job is stored or none is. A workflow is stored once. With ``conn=``,
        the application's own connection, the jobs join its transaction as
        ``Kind.enqueue``'s do: they exist if and only if it commits.
        """
        binding = self._binding(store)
        write = lambda tp: self._write(binding, tp)  # noqa: E731
        store_jobs(binding, self.name, "enqueue", write, conn, (self.id, self.name))
        self._stored = True
        return self.id

    async def aenqueue(self, store: Store, *, conn: object = None) -> str:
        """The async form of enqueue."""
        binding = self._binding(store)
        write = lambda tp: self._write(binding, tp)  # noqa: E731
        await astore_jobs(binding, self.name, "enqueue", write, conn, (self.id, self.name))
        self._stored = True
        return self.id

    def _binding(self, store: Store) -> Binding:
        if not isinstance(store, Store):
            raise TypeError(f"Workflow {self.name!r}: want a Store, got {type(store).__name__}")
        if self._stored:
            raise ValueError(f"Workflow {self.name!r}: the workflow was stored already")
        if not self._steps:
            raise ValueError(f"Workflow {self.name!r}: the workflow has no job")
        return Binding(store, store.max_payload_bytes)

    def _write(self, binding: Binding, traceparent: str | None) -> Any:
        op = self._jobs(binding, traceparent)
        return [job for _, job, _, _ in op.jobs], op


def _placeholder(
    kind: Kind[Any, Any],
    binding: Binding,
    options: EnqueueOptions,
    traceparent: str | None,
    named: Named,
) -> list[NewJob]:
    """A fed node's job: its kind's options, and a null payload its dependency's result replaces."""
    where = f"add {kind.name!r}"
    if options:
        opts, _, run_at = kind._overridden(where, options)
    else:
        opts, run_at = kind.options, None
    starts = opts.run_at(where, named.at, run_at)
    return [
        NewJob(
            named.ids[0],
            "null",
            starts,
            opts.queue,
            opts.priority,
            opts.max_attempts,
            opts.timeout,
            traceparent,
        )
    ]


_NewStep = tuple[str, NewJob, tuple[After, ...], bool]
"""A job to store: its kind's name, the job, its dependencies, and whether the first feeds it."""


class StoreWorkflow:
    """The write that stores a workflow's jobs and dependencies, in one transaction.

    A job with dependencies is stored pending, one without queued. With
    create False the workflow exists already (a running job's additions).
    """

    __slots__ = ("create", "jobs", "name", "now", "workflow_id")

    def __init__(
        self,
        workflow_id: str,
        name: str,
        jobs: Sequence[_NewStep],
        now: str,
        create: bool = True,
    ) -> None:
        self.workflow_id = workflow_id
        self.name = name
        self.jobs = jobs
        self.now = now
        self.create = create

    def __call__(self, q: WorkflowQueries) -> None:
        if self.create:
            q.create_workflow(id=self.workflow_id, name=self.name, now=self.now)
        q.insert_workflow_jobs(
            workflow_id=self.workflow_id,
            jobs=[WorkflowJob(kind, job, len(after)) for kind, job, after, _ in self.jobs],
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
    success whose cancel was requested while the job ran (a cancel of the
    job, or of its workflow) stores them cancelled: they never run.
    """

    def __init__(self, workflow_id: str, job: str, kind: str, store: Store) -> None:
        super().__init__("fan-out")
        self.id = workflow_id
        self.current: Node[Any, Any] = Node(self, kind, job)
        """The running job, as a dependency of the jobs it adds."""
        self._binding_ = Binding(store, store.max_payload_bytes)
        self._new: list[_NewStep] = []

    def __repr__(self) -> str:
        return f"FanOut({self.id!r}, {self.current!r})"

    def _has(self, node: Node[Any, Any]) -> bool:
        return node is self.current or super()._has(node)

    def _added(self) -> None:
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

    def __call__(self, q: WorkflowQueries) -> None:
        """Stores the added jobs: run by the write that records the running job's success."""
        now = timestamp(self._binding_.store.clock())
        StoreWorkflow(self.id, self.name, self._new, now, create=False)(q)

    def cancel_if_requested(self, q: WorkflowQueries) -> None:
        """Cancels the added jobs, just stored, if the running job's cancel was requested.

        Run after the running job's dependents were settled, so that a job
        it feeds holds its result, as a retry of that job will need.
        """
        now = timestamp(self._binding_.store.clock())
        ids = [job.id for _, job, _, _ in self._new]
        q.cancel_added_jobs(ids=ids, adder=self.current.id, now=now)
