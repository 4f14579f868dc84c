"""drain: runs every job a runner would run, inline, until none is left to run."""

import asyncio
import weakref

from jobtable._engines.base import Queries, Statement
from jobtable._errors import RunnerError, SecretKeyError
from jobtable._job import JobRecord, Status
from jobtable._runner.run_operations import StageJobs
from jobtable._runner.runner import Runner
from jobtable._values import timestamp


class _ReadyScheduled(Statement[int]):
    """The write that makes the scheduled jobs of queue ready now, but sleeping or waiting ones."""

    __slots__ = ("queue",)

    def __init__(self, queue: str) -> None:
        self.queue = queue

    def __call__(self, q: Queries) -> int:
        return q.ready_scheduled_jobs(queue=self.queue)


class _ReadyRetries(Statement[int]):
    """The write that makes the jobs of queue waiting for another attempt ready now."""

    __slots__ = ("queue",)

    def __init__(self, queue: str) -> None:
        self.queue = queue

    def __call__(self, q: Queries) -> int:
        return q.ready_retries(queue=self.queue)


def _check(runner: Runner, max_runs: int) -> None:
    if not isinstance(runner, Runner):
        raise TypeError(f"drain: want a jobtable.Runner, got {type(runner).__name__}")
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1:
        raise ValueError(f"drain: max_runs must be a positive int, got {max_runs!r}")
    if runner.stopping:
        raise RunnerError("drain: the runner was stopped")
    if runner._tasks:
        raise RunnerError(
            "drain: the runner is started; drain runs jobs inline on a runner that is not"
        )


async def _make_ready(runner: Runner, *, retries: bool, scheduled: bool) -> int:
    """Makes the jobs drain runs early ready to be claimed; returns how many it made ready."""
    made = 0
    for queue in runner.queues:
        if scheduled:
            now = timestamp(runner.store.clock())
            made += await runner.store.engine.awrite(StageJobs(queue, now))
            made += await runner.store.engine.awrite(_ReadyScheduled(queue))
        elif retries:
            made += await runner.store.engine.awrite(_ReadyRetries(queue))
    return made


async def _left(runner: Runner, *, retries: bool, scheduled: bool) -> list[JobRecord]:
    """The queued jobs of the runner's queues that drain would still run."""
    now = runner.store.clock()
    left: list[JobRecord] = []
    for queue in runner.queues:
        for record in await runner.store.alist_jobs(status=Status.QUEUED, queue=queue, limit=20):
            if scheduled or record.run_at <= now or (retries and record.attempt > 0):
                left.append(record)
    return left


async def drain(
    runner: Runner, *, retries: bool = True, scheduled: bool = False, max_runs: int = 1000
) -> list[JobRecord]:
    """Runs the runner's queued jobs inline, one at a time, until none is left to run.

    The runner must not be started: each job is claimed, run by its handler and
    recorded in the calling task, as ``Runner.run_next`` does: the next is
    always the first ready job of the runner's queues, taken in their order,
    lowest priority and oldest first within one. It runs the ready jobs of the
    runner's queues, and the jobs their handlers enqueue into those queues
    while drain runs.

    A job that sleeps (``JobContext.sleep_for``) runs again once its time has
    come by the store's clock (``FrozenClock.advance``), even with scheduled;
    one that waits for a signal (``wait_for``) once the signal is sent or its
    timeout has come. Until then it stays queued.

    First, each of the runner's periodic schedules (``Runner.periodic``)
    enqueues its latest tick due by the store's clock, as a started runner
    would (the first drain counts as the start, for ``missed``); so with a
    ``FrozenClock``, ``clock.advance(...)`` then drain runs the tick reached.

    A job of a kind the runner has no handler for fails its attempt, as a
    started runner would.

    Args:
        runner: The runner whose jobs to run; not started.
        retries: A job whose attempt failed with attempts left, or raised
            ``Retry``, runs again at once, without waiting for its backoff (its
            recorded run_at stays what the backoff said), so every job drain ran
            ends succeeded, failed or cancelled; False leaves them queued for
            their backoff.
        scheduled: The jobs whose run_at (``delay``, ``run_at``) has not come
            yet by the store's clock run too; by default they stay queued. Move
            a ``FrozenClock`` on to run those due by then.
        max_runs: At most this many attempts.

    Returns:
        The record of every job it ran, once each, in the order they first ran,
        as they stand at the end.

    Raises:
        AssertionError: max_runs attempts ran and jobs are still left to run (a
            handler that enqueues or retries for ever).
        SecretKeyError: A job's secrets need a key the runner's store lacks
            (naming the key id); the job is put back, its attempt unused.
        RunnerError: The runner was started or stopped.
        TypeError: runner is not a Runner.
        ValueError: max_runs is not a positive int.
    """
    _check(runner, max_runs)
    await runner._periodic.enqueue_inline()
    ran: dict[str, None] = {}
    runs = 0
    while runs < max_runs:
        lacked = dict(runner._executor.missing_keys.counts)
        job_id = await runner.run_next()
        if job_id is not None and runner._executor.missing_keys.counts != lacked:
            _refuse_put_back(job_id, runner._executor.missing_keys.counts, lacked)
        if job_id is None:
            if await _make_ready(runner, retries=retries, scheduled=scheduled):
                continue
            break
        ran[job_id] = None
        runs += 1
    else:
        left = await _left(runner, retries=retries, scheduled=scheduled)
        if left:
            shown = ", ".join(f"{r.kind} {r.id} (attempt {r.attempt})" for r in left)
            raise AssertionError(
                f"drain: ran max_runs={max_runs} attempts and jobs are still left to run: "
                f"{shown}; does a handler enqueue or retry jobs for ever?"
            )
    return [await runner.store.ainspect(job_id) for job_id in ran]


def _refuse_put_back(job_id: str, missing: dict[str, int], before: dict[str, int]) -> None:
    """Raises SecretKeyError for the job the runner just put back for want of a secret key."""
    grown = [key_id for key_id, count in missing.items() if count != before.get(key_id, 0)]
    raise SecretKeyError(
        f'drain: job {job_id} holds secrets under secret key "{grown[0]}", which the '
        f"runner's store lacks: the job was put back without using an attempt; open the "
        f"store with that key (Store.open(..., secret_keys=...) or JOBTABLE_SECRET_KEYS)",
        key_id=grown[0],
    )


_LOOPS: "weakref.WeakKeyDictionary[Runner, asyncio.Runner]" = weakref.WeakKeyDictionary()


def _loop_of(runner: Runner) -> asyncio.Runner:
    """The event loop drain_sync runs runner's jobs on: one per runner, for all its drains.

    A runner's asyncio events bind to the first loop that waits on them, so
    every drain of one runner must use the same loop; it closes with the runner.
    """
    loop = _LOOPS.get(runner)
    if loop is None:
        loop = asyncio.Runner()
        _LOOPS[runner] = loop
        weakref.finalize(runner, loop.close)
    return loop


def drain_sync(
    runner: Runner, *, retries: bool = True, scheduled: bool = False, max_runs: int = 1000
) -> list[JobRecord]:
    """The sync form of drain, for tests that are plain functions (Django's, Flask's).

    It takes drain's arguments and returns and raises what drain does. It runs
    the jobs on an event loop of its own, the same for every drain of one
    runner; from code that runs on an event loop, await drain instead: there it
    raises RuntimeError.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("drain_sync: called on a running event loop; use await drain(runner)")
    _check(runner, max_runs)
    return _loop_of(runner).run(
        drain(runner, retries=retries, scheduled=scheduled, max_runs=max_runs)
    )
