"""The SQLite writer's group commit on real files: who leads, and when results are given.

A write that finds the writer busy queues; once the batch under way has
committed, the oldest synchronous write waiting is woken to lead the next
batch (which holds it), and only when none waits does the writer thread
lead. The other synchronous callers of a batch are woken one by one, each
by the one before. These tests hold the writer with a ``Leader`` so that writes queue
behind it, and never assert on time.
"""

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from interrupting import interrupt_queued_write
from seam import create, exists
from test_sqlite_engine import (
    WAIT,
    Leader,
    create_then_raise,
    opened,
    start_writers,
    wait_for_queued,
)

from jobtable._engines.base import Queries
from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._errors import StoreError


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[SQLiteEngine]:
    with opened(tmp_path / "app.db") as engine:
        yield engine


def recording(job_id: str, ran_in: dict[str, threading.Thread]) -> Callable[[Queries], None]:
    """create(job_id), noting in ran_in the thread it ran in."""
    store = create(job_id)

    def op(q: Queries) -> None:
        ran_in[job_id] = threading.current_thread()
        store(q)

    return op


def queue_one_by_one(
    engine: SQLiteEngine, ops: list[Callable[[Queries], object]]
) -> list[Callable[[], list[object]]]:
    """Starts a synchronous write per op, each queued before the next; joined by finish_writers."""
    joins = []
    for number, op in enumerate(ops, 1):
        joins.append(start_writers(engine, [op]))
        wait_for_queued(engine, number)
    return joins


def finish_writers(joins: list[Callable[[], list[object]]]) -> list[object]:
    """Joins the writers of queue_one_by_one; each one's result or exception, in order."""
    return [result for join in joins for result in join()]


def test_writes_queued_behind_a_leader_are_led_by_the_oldest_of_their_own_threads(
    engine: SQLiteEngine,
) -> None:
    ran_in: dict[str, threading.Thread] = {}
    leader = Leader(engine)
    before = engine.commits
    joins = queue_one_by_one(engine, [recording(f"j{n}", ran_in) for n in range(5)])
    leader.finish()
    assert finish_writers(joins) == [None] * 5
    assert engine.commits - before == 2  # the leader's, then the five in one
    threads = set(ran_in.values())
    assert len(threads) == 1  # one batch, in one thread
    [thread] = threads
    assert thread is not leader.thread
    assert not thread.name.startswith("jobtable-sqlite-writer")  # no hop to the writer thread


def test_a_queued_write_returns_only_once_its_batch_has_committed(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with opened(path) as engine:
        returned = threading.Event()
        seen: dict[str, bool] = {}

        def write_a() -> None:
            engine.write(create("a"))
            returned.set()

        def after_a(q: Queries) -> None:
            # Runs in the batch after "a" ran, before the batch commits.
            returned.wait(0.5)
            seen["returned"] = returned.is_set()
            seen["visible"] = exists(engine, "a")

        leader = Leader(engine)
        first = queue_one_by_one(engine, [create("first")])
        a_thread = threading.Thread(target=write_a)
        a_thread.start()
        wait_for_queued(engine, 2)
        last = start_writers(engine, [after_a])
        wait_for_queued(engine, 3)
        leader.finish()
        assert finish_writers([*first, last]) == [None, None]
        a_thread.join(WAIT)
        assert seen == {"returned": False, "visible": False}
        assert returned.is_set()
        assert exists(engine, "a")


def test_an_awrite_gets_its_result_only_once_its_batch_has_committed(
    engine: SQLiteEngine,
) -> None:
    returned = threading.Event()
    seen: dict[str, bool] = {}

    def after_a(q: Queries) -> None:
        returned.wait(0.5)
        seen["returned"] = returned.is_set()
        seen["visible"] = exists(engine, "a")

    async def write_a() -> None:
        await engine.awrite(create("a"))
        returned.set()

    leader = Leader(engine)
    loop_thread = threading.Thread(target=lambda: asyncio.run(write_a()))
    loop_thread.start()
    wait_for_queued(engine, 1)
    last = start_writers(engine, [after_a])
    wait_for_queued(engine, 2)
    leader.finish()
    assert last() == [None]
    loop_thread.join(WAIT)
    assert seen == {"returned": False, "visible": False}
    assert returned.is_set()


def test_a_waiting_caller_whose_own_write_fails_still_commits_the_rest_of_its_batch(
    engine: SQLiteEngine,
) -> None:
    boom = ValueError("the new leader's own failure")
    leader = Leader(engine)
    before = engine.commits
    joins = queue_one_by_one(engine, [create_then_raise(boom), create("a"), create("b")])
    leader.finish()
    assert finish_writers(joins) == [boom, None, None]
    assert engine.commits - before == 2
    assert not exists(engine, "bad")
    assert exists(engine, "a")
    assert exists(engine, "b")
    engine.write(create("after"))  # the writer went idle in working order
    assert exists(engine, "after")


def test_a_write_from_inside_an_op_of_a_shared_batch_is_refused_for_that_op_alone(
    engine: SQLiteEngine,
) -> None:
    def nested(q: Queries) -> None:
        engine.write(create("inner"))

    leader = Leader(engine)
    joins = queue_one_by_one(engine, [create("a"), nested, create("b")])
    leader.finish()
    a, refused, b = finish_writers(joins)
    assert (a, b) == (None, None)
    assert isinstance(refused, StoreError)
    assert "inside a write operation" in str(refused)
    assert not exists(engine, "inner")


def test_awrites_from_two_event_loops_share_a_batch_and_each_loop_gets_its_results(
    engine: SQLiteEngine,
) -> None:
    results: dict[str, list[object]] = {}

    def loop_writes(name: str) -> None:
        async def writes() -> list[object]:
            return await asyncio.gather(*(engine.awrite(create(f"{name}{n}")) for n in range(3)))

        results[name] = asyncio.run(writes())

    leader = Leader(engine)
    before = engine.commits
    threads = [threading.Thread(target=loop_writes, args=(name,)) for name in ("x", "y")]
    for thread in threads:
        thread.start()
    wait_for_queued(engine, 6)
    leader.finish()
    for thread in threads:
        thread.join(WAIT)
    assert results == {"x": [None] * 3, "y": [None] * 3}
    assert engine.commits - before == 2  # the leader's, then all six in one
    assert all(exists(engine, f"{name}{n}") for name in "xy" for n in range(3))


def write_interrupted(
    engine: SQLiteEngine, *, once_batch_delivered: bool
) -> tuple[list[object], bool]:
    """The main thread's write of "interrupted", between "next-leader" and "after", interrupted.

    "next-leader" leads their batch, so it is the one that wakes the others.
    """
    leader = Leader(engine)
    return interrupt_queued_write(
        write=lambda: engine.write(create("interrupted")),
        start_before=lambda: start_writers(engine, [create("next-leader")]),
        start_after=lambda: start_writers(engine, [create("after")]),
        wait_for_queued=lambda count: wait_for_queued(engine, count),
        finish_leader=leader.finish,
        once_batch_delivered=once_batch_delivered,
        limit=WAIT,
    )


def test_a_caller_interrupted_while_it_waits_still_has_its_write_committed_with_its_batch(
    engine: SQLiteEngine,
) -> None:
    after, interrupted = write_interrupted(engine, once_batch_delivered=False)
    assert interrupted
    assert after == [None]
    assert exists(engine, "interrupted")
    assert exists(engine, "after")


def test_a_caller_interrupted_once_its_batch_is_over_still_wakes_the_callers_after_it(
    engine: SQLiteEngine,
) -> None:
    # Its wake was released while it ran the handler: nobody will wait for
    # it again, so the interrupted caller itself wakes the next one.
    after, interrupted = write_interrupted(engine, once_batch_delivered=True)
    assert interrupted
    assert after == [None]
    assert exists(engine, "interrupted")
    assert exists(engine, "after")
    engine.write(create("later"))  # the writer is in working order
    assert exists(engine, "later")


def test_close_while_writes_wait_behind_a_leader_commits_them_all(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    engine = SQLiteEngine.open(path)
    leader = Leader(engine)
    joins = queue_one_by_one(engine, [create(f"t{n}") for n in range(4)])
    tasks_done: list[object] = []

    def loop_writes() -> None:
        async def writes() -> list[object]:
            return await asyncio.gather(*(engine.awrite(create(f"a{n}")) for n in range(4)))

        tasks_done.extend(asyncio.run(writes()))

    loop_thread = threading.Thread(target=loop_writes)
    loop_thread.start()
    wait_for_queued(engine, 8)
    closing = threading.Thread(target=engine.close)
    closing.start()
    leader.finish()
    closing.join(WAIT)
    loop_thread.join(WAIT)
    assert not closing.is_alive()
    assert finish_writers(joins) == [None] * 4
    assert tasks_done == [None] * 4
    with pytest.raises(StoreError, match="closed"):
        engine.write(create("late"))
    with opened(path) as reopened:
        assert all(exists(reopened, f"{kind}{n}") for kind in "ta" for n in range(4))


def test_many_threads_and_tasks_writing_at_once_never_get_busy(tmp_path: Path) -> None:
    threads, tasks, each = 16, 16, 25
    with opened(tmp_path / "app.db") as engine:
        errors: list[BaseException] = []
        start = threading.Barrier(threads + 1, timeout=WAIT)

        def thread_writes(number: int) -> None:
            start.wait()
            try:
                for n in range(each):
                    engine.write(create(f"t{number}-{n}"))
                    assert exists(engine, f"t{number}-{n}")
            except BaseException as err:
                errors.append(err)

        async def task_writes(number: int) -> None:
            for n in range(each):
                await engine.awrite(create(f"a{number}-{n}"))

        async def all_tasks() -> None:
            await asyncio.gather(*(task_writes(number) for number in range(tasks)))

        pool = [threading.Thread(target=thread_writes, args=(n,)) for n in range(threads)]
        pool.append(threading.Thread(target=lambda: (start.wait(), asyncio.run(all_tasks()))))
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join(WAIT * 3)
        assert not any(thread.is_alive() for thread in pool)
        assert errors == []
        ids = [f"t{t}-{n}" for t in range(threads) for n in range(each)]
        ids += [f"a{t}-{n}" for t in range(tasks) for n in range(each)]
        assert all(exists(engine, job_id) for job_id in ids)


def test_an_update_returning_left_unread_does_not_keep_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with opened(path) as engine:
        engine.write(create("a"))
        engine.write(create("b"))
        conn = engine._writer.connection

        def touch_one(q: Queries) -> object:
            return conn.execute("UPDATE jobs SET priority = 7 RETURNING id").fetchone()

        assert engine.write(touch_one) is not None
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # the writer holds no lock: no SQLITE_BUSY
            other.execute("ROLLBACK")
        finally:
            other.close()
        engine.write(create("c"))
        assert exists(engine, "c")
