"""jobtable runs long work in the background, with a SQL table as the queue.

A job is a row in the jobs table: ``Kind.enqueue`` inserts it queued, and a
fixed pool of workers claims queued jobs oldest first, so the table itself is
the queue and a job enqueued before a restart still runs after it.

A kind, ``Kind(name, Payload, Result)``, is a declaration that a web process
imports to enqueue and read jobs through a ``Store``, with no handler code.
In a worker, each kind has one handler, attached with ``Runner.handler``
(or ``Runner.register``) before ``Runner.start``. A handler takes a typed
payload and returns a typed result, which the runner stores as JSON; it may
publish partial results while it runs. Only typed data and ``Failure``
messages are stored, so no handler error text, which may quote a URL, token
or response body from a dependency, can reach the table or the API.
"""

import warnings as _warnings
from importlib import metadata as _metadata

from jobtable._backoff import WriteBackoff
from jobtable._batch import Batch, BatchKind
from jobtable._dashboard import dashboard
from jobtable._debounce import Debounce
from jobtable._errors import (
    Failure,
    JobCancelled,
    JobFailed,
    JobNotFound,
    JobtableError,
    NotRunning,
    PayloadError,
    ResultError,
    Retry,
    RunnerError,
    SecretKeyError,
    StepError,
    StoreError,
    WaitTimeout,
)
from jobtable._flow import Partition, Queue, Rate, Sequence, WaitReason
from jobtable._job import (
    MESSAGE_INTERNAL,
    MESSAGE_INTERRUPTED,
    MESSAGE_PAYLOAD_MISMATCH,
    MESSAGE_TIMED_OUT,
    AttemptError,
    CancelResult,
    Job,
    JobRecord,
    JobStep,
    LinkedJob,
    Status,
    WorkflowLinks,
)
from jobtable._kind import Kind
from jobtable._labels import Enqueueing
from jobtable._operator.dashboard import (
    BulkCancel,
    Health,
    KindFigures,
    KindReport,
    QueueAlarm,
    QueueHealth,
)
from jobtable._operator.models import (
    DeleteResult,
    QueueStats,
    RetryResult,
    RunnerInfo,
    SchemaState,
    Stats,
    ThroughputPoint,
)
from jobtable._operator.queues import QueueInfo
from jobtable._operator.workflows import WorkflowGraph, WorkflowNode, WorkflowSummary
from jobtable._options import (
    EnqueueOptions,
    ExponentialBackoff,
    JobOptions,
    PeriodicOptions,
    RetryPolicy,
)
from jobtable._runner.context import Dependency, JobContext
from jobtable._runner.handler import (
    AsyncBatchHandler,
    AsyncHandler,
    BatchJob,
    SyncBatchHandler,
    SyncHandler,
)
from jobtable._runner.hooks import AttemptOutcome, CallNext, RunnerHooks
from jobtable._runner.runner import Runner
from jobtable._signal import APPROVAL, Approval, Signal, SignalWait, TimedOut
from jobtable._store import Store
from jobtable._unique import EnqueueResult, Unique
from jobtable._workflow import After, Node, Workflow

__all__ = [
    "APPROVAL",
    "MESSAGE_INTERNAL",
    "MESSAGE_INTERRUPTED",
    "MESSAGE_PAYLOAD_MISMATCH",
    "MESSAGE_TIMED_OUT",
    "After",
    "Approval",
    "AsyncBatchHandler",
    "AsyncHandler",
    "AttemptError",
    "AttemptOutcome",
    "Batch",
    "BatchJob",
    "BatchKind",
    "BulkCancel",
    "CallNext",
    "CancelResult",
    "Debounce",
    "DeleteResult",
    "Dependency",
    "EnqueueOptions",
    "EnqueueResult",
    "Enqueueing",
    "ExponentialBackoff",
    "Failure",
    "Health",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobNotFound",
    "JobOptions",
    "JobRecord",
    "JobStep",
    "JobtableError",
    "Kind",
    "KindFigures",
    "KindReport",
    "LinkedJob",
    "Node",
    "NotRunning",
    "Partition",
    "PayloadError",
    "PeriodicOptions",
    "Queue",
    "QueueAlarm",
    "QueueHealth",
    "QueueInfo",
    "QueueStats",
    "Rate",
    "ResultError",
    "Retry",
    "RetryPolicy",
    "RetryResult",
    "Runner",
    "RunnerError",
    "RunnerHooks",
    "RunnerInfo",
    "SchemaState",
    "SecretKeyError",
    "Sequence",
    "Signal",
    "SignalWait",
    "Stats",
    "Status",
    "StepError",
    "Store",
    "StoreError",
    "SyncBatchHandler",
    "SyncHandler",
    "ThroughputPoint",
    "TimedOut",
    "Unique",
    "WaitReason",
    "WaitTimeout",
    "Workflow",
    "WorkflowGraph",
    "WorkflowLinks",
    "WorkflowNode",
    "WorkflowSummary",
    "WriteBackoff",
    "dashboard",
]

__version__ = _metadata.version("jobtable")
"""The installed jobtable's version, read from its package metadata (pyproject's version)."""


def __getattr__(name: str) -> object:
    """Serves the deprecated names, each with a DeprecationWarning naming its replacement."""
    if name == "Backoff":
        _warnings.warn(
            "jobtable.Backoff is deprecated: use jobtable.WriteBackoff, the same class "
            "(the wait between retries of a failed database write; a job's retries "
            "follow ExponentialBackoff)",
            DeprecationWarning,
            stacklevel=2,
        )
        return WriteBackoff
    raise AttributeError(f"module 'jobtable' has no attribute {name!r}")
