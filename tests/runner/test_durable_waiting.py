"""Durable waiting: a handler that sleeps or waits for a signal holds no worker meanwhile.

``ctx.sleep_for`` / ``ctx.sleep_until`` and ``ctx.wait_for`` end the attempt
and put the job back in the table; it resumes (its steps skipped) when its
time comes or a signal is sent. Each test runs on both engines.
"""

import asyncio
import contextlib
import datetime
import pathlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable

import psycopg
import pytest
from pydantic import BaseModel

import jobtable
from jobtable._engines.base import Queries
from jobtable.testing import FrozenClock

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]


class Decision(BaseModel):
    approved: bool
    note: str


DECIDED = jobtable.Signal("decided", Decision)
NAPPER = jobtable.Kind("napper", int, str)
PLAIN_NAPPER = jobtable.Kind("plain-napper", int, str)
WAITER = jobtable.Kind("waiter", str, str)
QUICK = jobtable.Kind("quick", int, int)


@contextlib.asynccontextmanager
async def running(runner: jobtable.Runner) -> AsyncIterator[None]:
    """Runs runner for the block, then stops it and waits for its end."""
    await runner.start()
    try:
        yield
    finally:
        runner.stop()
        await runner.wait()


def lines(path: pathlib.Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def napping(
    store: jobtable.Store, marker: pathlib.Path, poll_interval: float = 0.05, **options: object
) -> jobtable.Runner:
    """A runner whose nappers take a step, sleep payload tenths of a second, then finish."""
    runner = jobtable.Runner(store, poll_interval=poll_interval, **options)  # type: ignore[arg-type]

    def before(n: int) -> int:
        with marker.open("a") as f:
            f.write(f"before {n}\n")
        return n

    @runner.handler(NAPPER)
    async def nap(ctx: jobtable.JobContext[str], payload: int) -> str:
        await ctx.step("before", before, payload)
        await ctx.sleep_for(datetime.timedelta(seconds=payload / 10))
        with marker.open("a") as f:
            f.write(f"after {payload}\n")
        return f"slept {payload}"

    @runner.handler(PLAIN_NAPPER)
    def plain_nap(ctx: jobtable.JobContext[str], payload: int) -> str:
        ctx.step_sync("before", before, payload)
        ctx.sleep_until_sync(ctx_now(store) + datetime.timedelta(seconds=payload / 10))
        return f"slept {payload}"

    @runner.handler(QUICK)
    async def quick(ctx: jobtable.JobContext[int], payload: int) -> int:
        with marker.open("a") as f:
            f.write(f"quick {payload}\n")
        return payload

    return runner


def ctx_now(store: jobtable.Store) -> datetime.datetime:
    return store.clock()


async def test_a_sleeping_job_gives_its_worker_back_and_resumes_with_its_steps_skipped(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    runner = napping(store, marker, workers=1)
    sleeper = NAPPER.enqueue(store, 5)
    quick = QUICK.enqueue(store, 1)
    async with running(runner):
        await wait_until(finished(runner, [sleeper, quick]), limit=30)
    assert lines(marker) == ["before 5", "quick 1", "after 5"]
    job = NAPPER.get(store, sleeper)
    assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "slept 5")
    record = store.inspect(sleeper)
    assert record.attempt == 2, "one claim to sleep, one to resume"
    assert [s.name for s in record.steps] == ["before", "jobtable:sleep:1"]


async def test_a_plain_handler_sleeps_until_a_time(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = napping(store, tmp_path / "runs.txt", workers=1)
    sleeper = PLAIN_NAPPER.enqueue(store, 3)
    async with running(runner):
        await wait_until(finished(runner, [sleeper]), limit=30)
    assert PLAIN_NAPPER.get(store, sleeper).result == "slept 3"
    assert lines(tmp_path / "runs.txt") == ["before 3"]


async def test_sleepers_beyond_the_workers_hold_none_and_other_jobs_still_run(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    runner = napping(store, marker, workers=2)
    sleepers = NAPPER.enqueue_many(store, [50] * 5)
    async with running(runner):
        await wait_until(lambda: len(lines(marker)) == 5, limit=30)
        quick = QUICK.enqueue_many(store, [1, 2, 3])
        await wait_until(finished(runner, quick), limit=30)
        statuses = {store.get(s).status for s in sleepers}
        assert statuses == {jobtable.Status.QUEUED}, "the sleepers still sleep"
        await wait_until(finished(runner, sleepers), limit=30)


async def test_a_sleeping_job_of_a_limited_queue_frees_its_slot(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    limited = jobtable.Kind("limited-napper", int, str, queue="one")
    store.declare([jobtable.Queue("one", concurrency=1)])
    runner = jobtable.Runner(store, queues={"one": 2}, poll_interval=0.05)

    @runner.handler(limited)
    async def nap(ctx: jobtable.JobContext[str], payload: int) -> str:
        with marker.open("a") as f:
            f.write(f"start {payload}\n")
        await ctx.sleep_for(datetime.timedelta(seconds=payload / 10))
        return "done"

    first = limited.enqueue(store, 30)
    second = limited.enqueue(store, 0)
    async with running(runner):
        await wait_until(finished(runner, [second]), limit=30)
        assert store.get(first).status is jobtable.Status.QUEUED
        await wait_until(finished(runner, [first]), limit=30)
    assert lines(marker)[:2] == ["start 30", "start 0"]


async def test_a_dependent_runs_after_its_sleeping_dependency_finishes(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    runner = napping(store, marker, workers=2)
    workflow = jobtable.Workflow("nap-then-quick")
    nap = workflow.add(NAPPER, 5)
    workflow.add(QUICK, 7, after=[nap])
    workflow_id = workflow.enqueue(store)
    ids = [job.id for job in store.workflow(workflow_id).jobs]
    async with running(runner):
        await wait_until(finished(runner, ids), limit=30)
    assert lines(marker) == ["before 5", "after 5", "quick 7"]


def waiting(store: jobtable.Store, marker: pathlib.Path) -> jobtable.Runner:
    """A runner whose waiter waits for DECIDED under its payload (see add_waiter)."""
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)
    add_waiter(runner, marker)
    return runner


def add_waiter(runner: jobtable.Runner, marker: pathlib.Path) -> None:
    """Attaches the waiter: a step, then a wait for DECIDED, 0.2 s at most when "short"."""

    def before(key: str) -> str:
        with marker.open("a") as f:
            f.write(f"before {key}\n")
        return key

    @runner.handler(WAITER)
    async def wait(ctx: jobtable.JobContext[str], payload: str) -> str:
        await ctx.step("before", before, payload)
        if payload.startswith("short"):
            short = datetime.timedelta(seconds=0.2)
            answer = await ctx.wait_for(DECIDED, key=payload, timeout=short)
            if isinstance(answer, jobtable.TimedOut):
                return f"timed out on {answer.key}"
        else:
            answer = await ctx.wait_for(DECIDED, key=payload)
        return f"{answer.approved} {answer.note}"


def waits(store: jobtable.Store, job_id: str) -> bool:
    """Whether the job waits for a signal, back in the table (one read)."""
    return store.signal_wait(job_id) is not None


async def test_a_signal_resumes_the_waiting_job_with_its_typed_payload(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    runner = waiting(store, marker)
    waiter = WAITER.enqueue(store, "order-1")
    other = WAITER.enqueue(store, "order-2")
    async with running(runner):
        await wait_until(lambda: waits(store, waiter) and waits(store, other), limit=30)
        assert store.signal(DECIDED, "order-1", Decision(approved=True, note="ok")) == 1
        await wait_until(finished(runner, [waiter]), limit=30)
    assert WAITER.get(store, waiter).result == "True ok"
    assert store.get(other).status is jobtable.Status.QUEUED
    assert lines(marker) == ["before order-1", "before order-2"]


async def test_a_signal_sent_before_the_wait_is_not_lost(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    assert store.signal(DECIDED, "early", Decision(approved=False, note="no")) == 0
    runner = waiting(store, tmp_path / "runs.txt")
    waiter = WAITER.enqueue(store, "early")
    async with running(runner):
        await wait_until(finished(runner, [waiter]), limit=30)
    assert WAITER.get(store, waiter).result == "False no"
    assert store.inspect(waiter).attempt == 1, "answered without giving its worker back"


async def test_a_wait_whose_timeout_passes_gets_a_timed_out_answer(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    runner = waiting(store, tmp_path / "runs.txt")
    waiter = WAITER.enqueue(store, "short-1")
    async with running(runner):
        await wait_until(finished(runner, [waiter]), limit=30)
    assert WAITER.get(store, waiter).result == "timed out on short-1"
    record = store.inspect(waiter)
    assert record.attempt == 2
    assert [s.name for s in record.steps] == ["before", "jobtable:wait:1"]


async def test_a_signal_before_the_timeout_wins(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    store.signal(DECIDED, "short-2", Decision(approved=True, note="in time"))
    runner = waiting(store, tmp_path / "runs.txt")
    waiter = WAITER.enqueue(store, "short-2")
    async with running(runner):
        await wait_until(finished(runner, [waiter]), limit=30)
    assert WAITER.get(store, waiter).result == "True in time"


async def test_a_signal_in_a_transaction_that_rolls_back_delivers_nothing(
    store: jobtable.Store,
    store_target: str,
    engine: str,
    tmp_path: pathlib.Path,
    wait_until: WaitUntil,
    finished: Finished,
) -> None:
    runner = waiting(store, tmp_path / "runs.txt")
    waiter = WAITER.enqueue(store, "tx")
    decided = Decision(approved=True, note="committed")
    async with running(runner):
        await wait_until(lambda: waits(store, waiter), limit=30)
        if engine == "sqlite":
            conn = sqlite3.connect(store_target, isolation_level=None)
            conn.execute("BEGIN")
            assert store.signal(DECIDED, "tx", decided, conn=conn) == 1
            conn.execute("ROLLBACK")
            conn.close()
        else:
            with psycopg.connect(store_target) as pg:
                assert store.signal(DECIDED, "tx", decided, conn=pg) == 1
                pg.rollback()
        assert waits(store, waiter)
        assert store.inspect(waiter).attempt == 1, "not woken"
        store.signal(DECIDED, "tx", decided)
        await wait_until(finished(runner, [waiter]), limit=30)
    assert WAITER.get(store, waiter).result == "True committed"


async def test_a_plain_handler_waits_and_every_waiter_on_the_key_is_resumed(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    plain = jobtable.Kind("plain-waiter", int, bool)
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)

    @runner.handler(plain)
    def wait(ctx: jobtable.JobContext[bool], payload: int) -> bool:
        return ctx.wait_for_sync(jobtable.APPROVAL, key="release").approved

    ids = plain.enqueue_many(store, [1, 2, 3])
    async with running(runner):
        await wait_until(lambda: all(waits(store, i) for i in ids), limit=30)
        assert store.signal(jobtable.APPROVAL, "release", jobtable.Approval(approved=True)) == 3
        await wait_until(finished(runner, ids), limit=30)
    assert [plain.get(store, i).result for i in ids] == [True, True, True]


def test_a_signal_of_the_wrong_payload_type_is_refused_and_nothing_is_stored(
    store: jobtable.Store,
) -> None:
    with pytest.raises(jobtable.PayloadError, match="signal 'decided': the payload is not"):
        store.signal(DECIDED, "k", {"approved": "maybe"})  # type: ignore[misc]
    with pytest.raises(ValueError, match="its key is empty"):
        store.signal(DECIDED, "", Decision(approved=True, note=""))


async def test_a_step_may_not_take_the_names_of_sleeps_and_waits(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    kind = jobtable.Kind("reserved", int, str)
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)

    def one(n: int) -> int:
        return n

    @runner.handler(kind)
    async def reserved(ctx: jobtable.JobContext[str], payload: int) -> str:
        try:
            await ctx.step("jobtable:sleep:1", one, payload)
        except ValueError as err:
            return str(err)
        return "taken"

    job = kind.enqueue(store, 1)
    async with running(runner):
        await wait_until(finished(runner, [job]), limit=30)
    assert "are jobtable's own" in str(kind.get(store, job).result)


async def test_the_heartbeat_deletes_signals_older_than_the_retention(
    store_target: str, tmp_path: pathlib.Path, wait_until: WaitUntil
) -> None:
    clock = FrozenClock(datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC))
    with jobtable.Store.open(store_target, clock=clock) as store:
        store.signal(DECIDED, "old", Decision(approved=True, note="old"))
        clock.advance(datetime.timedelta(days=6))
        store.signal(DECIDED, "new", Decision(approved=True, note="new"))
        clock.advance(datetime.timedelta(days=1, seconds=1))
        runner = napping(store, tmp_path / "runs.txt", workers=1, lease=0.3)
        async with running(runner):
            await wait_until(lambda: kept(store) == ["new"], limit=30)


def kept(store: jobtable.Store) -> list[str]:
    """The keys of the signals DECIDED still has stored."""

    def stored(q: Queries) -> list[str]:
        return [
            key
            for key in ("old", "new")
            if q.find_signal(name="decided", key=key, after_id=0) is not None
        ]

    return store.engine.read(stored)


async def test_a_sleeping_job_of_a_sequence_keeps_its_place(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    runner = napping(store, marker, workers=2)
    first = NAPPER.enqueue(store, 5, sequence_key="customer-1")
    second = QUICK.enqueue(store, 2, sequence_key="customer-1")
    other = QUICK.enqueue(store, 3)
    async with running(runner):
        await wait_until(finished(runner, [first, second, other]), limit=30)
    assert lines(marker) == ["before 5", "quick 3", "after 5", "quick 2"]


async def test_a_sleeper_resumes_at_its_time_and_a_waiter_at_its_signal_not_at_the_poll(
    store: jobtable.Store, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    marker = tmp_path / "runs.txt"
    # Far longer than the test: a resume that waited for the poll would fail it.
    runner = napping(store, marker, workers=2, poll_interval=60)
    add_waiter(runner, marker)
    sleeper = NAPPER.enqueue(store, 3)
    waiter = WAITER.enqueue(store, "prompt")
    async with running(runner):
        await wait_until(lambda: waits(store, waiter), limit=20)
        store.signal(DECIDED, "prompt", Decision(approved=True, note="now"))
        await wait_until(finished(runner, [sleeper, waiter]), limit=20)


async def test_a_job_whose_cancel_came_before_its_wait_is_cancelled_with_its_dependents(
    store: jobtable.Store, wait_until: WaitUntil
) -> None:
    gated = jobtable.Kind("gated-waiter", int, str)
    started, release = threading.Event(), threading.Event()
    runner = jobtable.Runner(store, workers=2, poll_interval=0.05)

    @runner.handler(gated)
    def wait(ctx: jobtable.JobContext[str], payload: int) -> str:
        started.set()
        release.wait(30)  # the cancel is requested meanwhile; the handler ignores it
        return ctx.wait_for_sync(DECIDED, key="never").note

    runner.handler(QUICK)(lambda ctx, n: n)
    workflow = jobtable.Workflow("cancelled-waiter")
    first = workflow.add(gated, 1)
    workflow.add(QUICK, 2, after=[first])
    workflow_id = workflow.enqueue(store)
    waiter, dependent = [job.id for job in store.workflow(workflow_id).jobs]
    async with running(runner):
        await asyncio.to_thread(started.wait, 30)
        assert store.cancel(waiter) is jobtable.CancelResult.REQUESTED
        release.set()
        await wait_until(
            lambda: (
                {store.get(i).status for i in (waiter, dependent)} == {jobtable.Status.CANCELLED}
            ),
            limit=30,
        )


BLOCKED = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    " AND classid::bigint = hashtext('jobtable-signal:' || current_schema())::bigint & 4294967295"
)
"""How many transactions wait for a signal key's lock in the current schema."""


async def test_a_signal_committed_while_the_job_begins_to_wait_is_not_missed(
    pg_url: str, tmp_path: pathlib.Path, wait_until: WaitUntil, finished: Finished
) -> None:
    """PostgreSQL: each side's snapshot misses the other's uncommitted write, but the key's lock
    makes the job's suspend wait for the signal's commit, and then see it."""
    with jobtable.Store.open(pg_url) as store, psycopg.connect(pg_url) as app:
        runner = waiting(store, tmp_path / "runs.txt")
        decided = Decision(approved=True, note="raced")
        assert store.signal(DECIDED, "race", decided, conn=app) == 0  # not committed yet
        waiter = WAITER.enqueue(store, "race")
        async with running(runner):
            with psycopg.connect(pg_url, autocommit=True) as watch:
                blocked = (
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                )
                await wait_until(lambda: watch.execute(blocked).fetchone() == (1,), limit=30)
            app.commit()
            await wait_until(finished(runner, [waiter]), limit=30)
        assert WAITER.get(store, waiter).result == "True raced"
