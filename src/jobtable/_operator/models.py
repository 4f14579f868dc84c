"""What the Store's operations for operators return: small models and enums.

The CLI and the dashboard print these; ``model_dump_json()`` is their
``--json`` form. None holds a handler's exception text: errors are the
stored messages only.
"""

import datetime
import enum

from pydantic import BaseModel, ConfigDict

from jobtable._job import Status


class RetryResult(enum.StrEnum):
    """What ``Store.retry`` did."""

    RETRIED = "retried"
    """The job had failed or been cancelled; it is queued again, with fresh attempts."""
    QUEUED = "queued"
    """The job is already queued; nothing changed."""
    RUNNING = "running"
    """The job is running; nothing changed (cancel it first to run it afresh)."""
    SUCCEEDED = "succeeded"
    """The job succeeded; nothing changed."""
    KEY_HELD = "key_held"
    """The job is unique and another job holds its key now; nothing changed."""
    BLOCKED = "blocked"
    """The job is of a workflow and a dependency it needs failed, was cancelled or was deleted
    before it succeeded; nothing changed. ``Store.inspect(job_id).workflow.blocked_by`` names
    it: retry that dependency, which brings this job back (a deleted one never can)."""


class DeleteResult(enum.StrEnum):
    """What ``Store.delete`` did."""

    DELETED = "deleted"
    """The job, which was not running, is gone."""
    RUNNING = "running"
    """The job is running and was kept: cancel it first."""


class RunnerInfo(BaseModel):
    """A registered runner: when it started, its last heartbeat, and the jobs it holds.

    alive is false once its heartbeat is older than the lease asked about:
    another runner will then interrupt its jobs. jobs are the ids of the
    running jobs it holds, oldest claim first; queues are the queues of
    those jobs, by name. The queues a runner serves are not recorded: an
    idle runner shows none.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime
    alive: bool
    jobs: list[str]
    queues: list[str] = []
    missing_keys: list[str] = []
    """The ids of the secret keys this runner lacked for a job it claimed, sorted.

    Each such job went back to the queue, its attempt unused, for a runner
    with the key. Written by the runner's heartbeat, so it shows within a
    third of the lease; cleared when the runner restarts (or registers
    again) and gone with its row when it stops. Empty while it lacked none.
    """


class QueueStats(BaseModel):
    """One queue's jobs: how many are in each status, and how long the oldest due one waited.

    counts leaves out the statuses the queue has no job in; its queued count
    includes the jobs scheduled for later. oldest_queued_age is how long the
    queued job that became due first (its run_at not after ``at``) has been
    due: None when no queued job is due, however many are scheduled for
    later. scheduled is how many queued jobs have a run_at after ``at``.
    """

    model_config = ConfigDict(frozen=True)

    queue: str
    counts: dict[Status, int]
    oldest_queued_age: datetime.timedelta | None
    scheduled: int = 0


class Stats(BaseModel):
    """Every queue that has jobs, by name, as one snapshot read at ``at``."""

    model_config = ConfigDict(frozen=True)

    at: datetime.datetime
    queues: list[QueueStats]


class ThroughputPoint(BaseModel):
    """How many jobs finished with status in the minute that starts at minute."""

    model_config = ConfigDict(frozen=True)

    minute: datetime.datetime
    status: Status
    jobs: int


class SchemaState(BaseModel):
    """Where a store's schema stands against this jobtable's.

    version is the schema's version in the database, 0 when it has no
    jobtable schema (or, for SQLite, no file); latest is the version this
    jobtable writes; pending is true when an upgrade (or the creation) is due.
    """

    model_config = ConfigDict(frozen=True)

    version: int
    latest: int
    pending: bool
