"""Debounced enqueues: one pending job per key, run once the key has been quiet.

Each test runs on both engines. Time is the store's clock, which a test
moves instead of sleeping.
"""

import datetime
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
from pydantic import BaseModel

import jobtable
from jobtable.testing import drain

UTC = datetime.UTC
T0 = datetime.datetime(2030, 1, 1, 12, tzinfo=UTC)
QUIET = datetime.timedelta(seconds=5)
S = jobtable.Status


class Edit(BaseModel):
    doc: str
    text: str


save = jobtable.Kind("save_doc", Edit, str)
by_doc = jobtable.Debounce(quiet=QUIET, fields=("doc",))


class Clock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed_store(store_target: str, clock: Clock) -> Iterator[jobtable.Store]:
    opened = jobtable.Store.open(store_target, clock=clock)
    yield opened
    opened.close()


def saver(
    store: jobtable.Store, ran: list[str], gate: threading.Event | None = None
) -> jobtable.Runner:
    """A runner whose save_doc handler records each text it saves (after gate, if given)."""
    runner = jobtable.Runner(
        store, queues={"default": 2, "limited": 2}, name="debounce", poll_interval=0.05
    )

    @runner.handler(save)
    def handle(ctx: jobtable.JobContext[str], edit: Edit) -> str:
        if gate is not None and edit.doc == "blocker":
            gate.wait(60)
        ran.append(edit.text)
        return edit.text

    return runner


async def test_enqueues_of_one_key_keep_one_job_with_the_last_payload_run_once(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    results = []
    for n in range(3):
        results.append(
            save.enqueue_result(timed_store, Edit(doc="a", text=f"v{n}"), debounce=by_doc)
        )
        clock.now += datetime.timedelta(seconds=1)
    other = save.enqueue_result(timed_store, Edit(doc="b", text="b0"), debounce=by_doc)
    [first, *later] = results
    assert not first.duplicate
    assert all(r == (first.id, True) for r in later)
    assert not other.duplicate
    assert other.id != first.id
    record = timed_store.inspect(first.id)
    assert record.payload == {"doc": "a", "text": "v2"}
    assert record.run_at == T0 + datetime.timedelta(seconds=2) + QUIET  # the last enqueue's quiet
    ran: list[str] = []
    runner = saver(timed_store, ran)
    assert await drain(runner) == []  # not quiet long enough yet
    clock.now += QUIET
    await drain(runner)
    assert sorted(ran) == ["b0", "v2"]
    again = save.enqueue_result(timed_store, Edit(doc="a", text="v3"), debounce=by_doc)
    assert not again.duplicate  # the key's job ran: a new one
    assert again.id != first.id


async def test_keep_first_keeps_the_first_payload_and_moves_the_run_time(
    timed_store: jobtable.Store, clock: Clock
) -> None:
    first = jobtable.Debounce(quiet=QUIET, key="doc-a", keep="first")
    job_id = save.enqueue(timed_store, Edit(doc="a", text="v0"), debounce=first)
    clock.now += datetime.timedelta(seconds=3)
    assert save.enqueue(timed_store, Edit(doc="a", text="v1"), debounce=first) == job_id
    record = timed_store.inspect(job_id)
    assert record.payload == {"doc": "a", "text": "v0"}
    assert record.run_at == clock.now + QUIET


async def test_concurrent_enqueues_of_one_key_store_one_job(timed_store: jobtable.Store) -> None:
    start = threading.Barrier(6)
    results: list[jobtable.EnqueueResult] = []
    lock = threading.Lock()

    def enqueue_many(n: int) -> None:
        start.wait(30)
        for i in range(20):
            got = save.enqueue_result(timed_store, Edit(doc="x", text=f"{n}-{i}"), debounce=by_doc)
            with lock:
                results.append(got)

    threads = [threading.Thread(target=enqueue_many, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(results) == 120
    assert len({r.id for r in results}) == 1
    assert [r.duplicate for r in results].count(False) == 1
    assert timed_store.inspect(results[0].id).status is S.QUEUED


async def test_a_debounced_job_of_a_limited_queue_absorbs_enqueues_while_held_then_runs_once(
    timed_store: jobtable.Store, clock: Clock, wait_until: Callable[..., Awaitable[None]]
) -> None:
    timed_store.set_limits("limited", concurrency=1)
    gate, ran = threading.Event(), list[str]()
    runner = saver(timed_store, ran, gate)
    await runner.start()
    try:
        blocker = save.enqueue(timed_store, Edit(doc="blocker", text="blocker"), queue="limited")
        await wait_until(lambda: timed_store.get(blocker).status is S.RUNNING)
        job_id = save.enqueue(
            timed_store, Edit(doc="d", text="d0"), queue="limited", debounce=by_doc
        )
        clock.now += QUIET * 2  # quiet long enough: due, but the blocker holds the one slot
        await wait_until(lambda: timed_store.inspect(job_id).waiting is not None)
        assert timed_store.get(job_id).status is S.QUEUED
        merged = save.enqueue(
            timed_store, Edit(doc="d", text="d1"), queue="limited", debounce=by_doc
        )
        assert merged == job_id
        clock.now += QUIET
        gate.set()
        await wait_until(lambda: timed_store.get(job_id).status is S.SUCCEEDED)
        assert ran == ["blocker", "d1"]
    finally:
        runner.stop()
        await runner.wait()


async def test_a_retried_cancelled_job_gives_up_its_key(timed_store: jobtable.Store) -> None:
    old = save.enqueue(timed_store, Edit(doc="r", text="old"), debounce=by_doc)
    timed_store.cancel(old)
    new = save.enqueue(timed_store, Edit(doc="r", text="new"), debounce=by_doc)
    assert new != old
    assert timed_store.retry(old) is jobtable.RetryResult.RETRIED
    assert save.enqueue(timed_store, Edit(doc="r", text="newer"), debounce=by_doc) == new
    assert timed_store.inspect(new).payload == {"doc": "r", "text": "newer"}


def test_debounce_is_refused_where_it_cannot_apply(timed_store: jobtable.Store) -> None:
    edit = Edit(doc="a", text="t")
    unique = jobtable.Kind("unique_save", Edit, str, unique=jobtable.Unique(fields=("doc",)))
    with pytest.raises(ValueError, match="debounce and unique both decide"):
        unique.enqueue(timed_store, edit, debounce=by_doc)
    unique.enqueue(timed_store, edit, debounce=by_doc, unique=None)  # the kind's turned off
    with pytest.raises(ValueError, match="debounce sets the job's run time"):
        save.enqueue(timed_store, edit, debounce=by_doc, delay=QUIET)
    with pytest.raises(ValueError, match="debounce field 'nope' is not a field of Edit"):
        save.enqueue(timed_store, edit, debounce=jobtable.Debounce(quiet=QUIET, fields=("nope",)))
    with pytest.raises(TypeError, match=r"debounce must be a jobtable\.Debounce"):
        save.enqueue(timed_store, edit, debounce=QUIET)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="quiet must be a positive timedelta"):
        jobtable.Debounce(quiet=datetime.timedelta(0))
    with pytest.raises(ValueError, match="Debounce: give key or fields, not both"):
        jobtable.Debounce(quiet=QUIET, key="k", fields=("doc",))
    with pytest.raises(ValueError, match="keep must be 'last' or 'first'"):
        jobtable.Debounce(quiet=QUIET, keep="middle")  # type: ignore[arg-type]
