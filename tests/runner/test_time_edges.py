"""Times at the ends of the calendar: stored, read back, never a traceback.

A run_at before the year 1000 was stored as "1-01-01T…" (strftime does not
pad the year), which no read could parse back: every listing and stats of
the store failed. A wait past the year 9999 (a Retry's after, a backoff, a
delay) overflowed the datetime where an outcome or an enqueue belongs.
"""

import datetime

import pytest

import jobtable

UTC = datetime.UTC
edge = jobtable.Kind("edge", int, int, max_attempts=3)


def test_a_run_at_before_the_year_1000_is_stored_and_read_back(store: jobtable.Store) -> None:
    first = datetime.datetime.min.replace(tzinfo=UTC)
    early = datetime.datetime(999, 5, 1, 12, 30, tzinfo=UTC)
    ids = [edge.enqueue(store, 1, run_at=first), edge.enqueue(store, 2, run_at=early)]
    assert [store.inspect(job_id).run_at for job_id in ids] == [first, early]
    assert {record.id for record in store.list_jobs()} == set(ids)
    [queue] = store.stats().queues
    assert queue.counts == {jobtable.Status.QUEUED: 2}


def test_a_delay_past_the_year_9999_is_refused_naming_it(store: jobtable.Store) -> None:
    with pytest.raises(ValueError, match=r"delay .* past the year 9999"):
        edge.enqueue(store, 1, delay=datetime.timedelta.max)
    assert store.list_jobs() == []


async def test_a_retry_past_the_year_9999_waits_until_its_end(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(edge)
    async def snooze(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Retry(after=datetime.timedelta.max)

    job_id = edge.enqueue(store, 1)
    assert await runner.run_next() == job_id
    record = store.inspect(job_id)
    assert record.status == jobtable.Status.QUEUED
    assert record.run_at.year == 9999


async def test_a_backoff_past_the_year_9999_waits_until_its_end(store: jobtable.Store) -> None:
    forever = jobtable.Kind(
        "forever", int, int, max_attempts=2, retry=lambda attempt: datetime.timedelta.max
    )
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(forever)
    async def fail(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise RuntimeError("try again")

    job_id = forever.enqueue(store, 1)
    assert await runner.run_next() == job_id
    record = store.inspect(job_id)
    assert record.status == jobtable.Status.QUEUED
    assert record.run_at.year == 9999
    assert [entry.error for entry in record.errors] == [jobtable.MESSAGE_INTERNAL]
