"""What the Store's dashboard operations return: per-kind figures, health, bulk counts.

Like ``jobtable._operator.models``, none holds a handler's exception text.
"""

import datetime
import enum

from pydantic import BaseModel, ConfigDict


class KindFigures(BaseModel):
    """One kind's finished jobs over a window: how many, how they ended, how long they took.

    failure_rate is failed over succeeded plus failed (None when neither);
    wait is started_at minus run_at (how long a due job waited for a
    worker), run is finished_at minus started_at of the jobs that succeeded
    or failed; their p50 and p95 are None when no job has them.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    finished: int
    succeeded: int
    failed: int
    cancelled: int
    per_minute: float
    failure_rate: float | None
    wait_p50: datetime.timedelta | None
    wait_p95: datetime.timedelta | None
    run_p50: datetime.timedelta | None
    run_p95: datetime.timedelta | None


class KindReport(BaseModel):
    """Every kind that finished jobs since ``since``, by name, read at ``at``.

    The figures come from the jobs read, at most ``limit``, the most recent
    first: complete is false when the window held more, and then the figures
    cover only the read jobs' span.
    """

    model_config = ConfigDict(frozen=True)

    at: datetime.datetime
    since: datetime.datetime
    read: int
    limit: int
    complete: bool
    kinds: list[KindFigures]


class QueueAlarm(enum.StrEnum):
    """Why a queue's due jobs may not run."""

    NO_LIVE_RUNNER = "no_live_runner"
    """No runner is alive at all: nothing will run the queue's due jobs."""
    NOT_SERVED = "not_served"
    """Runners are alive, none holds a job of the queue, and its due jobs waited past the lease.

    Runners do not record the queues they serve, so this is evidence, not
    proof: a live runner serving the queue would have claimed them.
    """


class QueueHealth(BaseModel):
    """A queue with jobs due now: how many, since when, and the alarm if they may not run."""

    model_config = ConfigDict(frozen=True)

    queue: str
    due: int
    oldest_due_at: datetime.datetime
    held_by_live: int
    alarm: QueueAlarm | None


class Health(BaseModel):
    """Whether the due jobs have live runners to run them, and which jobs dead runners hold.

    live_runners names the runners alive within the lease; queues are the
    queues with due jobs; dead_held maps the id of each running job whose
    runner is dead (or no longer registered) to that runner's name: another
    runner's maintenance fails it as interrupted.
    """

    model_config = ConfigDict(frozen=True)

    at: datetime.datetime
    lease: float
    live_runners: list[str]
    queues: list[QueueHealth]
    dead_held: dict[str, str]


class BulkCancel(BaseModel):
    """What a cancel of many jobs did: cancelled queued ones, requested running ones."""

    model_config = ConfigDict(frozen=True)

    cancelled: int
    requested: int
