"""On PostgreSQL, leases are measured on the server's clock, so a skewed runner stays alive."""

import asyncio
import datetime
from collections.abc import Awaitable, Callable

import jobtable

WaitUntil = Callable[..., Awaitable[None]]


async def test_a_runner_whose_clock_is_an_hour_behind_is_not_taken_for_dead(
    pg_url: str, wait_until: WaitUntil
) -> None:
    def behind() -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)

    work = jobtable.Kind("work", int, int)
    skewed_store = jobtable.Store.open(pg_url, clock=behind)
    store = jobtable.Store.open(pg_url)
    skewed = jobtable.Runner(skewed_store, workers=1, name="skewed", lease=5)
    release = asyncio.Event()
    started = asyncio.Event()

    @skewed.handler(work)
    async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        started.set()
        await release.wait()
        return payload

    try:
        job_id = work.enqueue(skewed_store, 1)
        await skewed.start()
        await asyncio.wait_for(started.wait(), 20)
        # A peer with a true clock starts and runs its maintenance: by the
        # runners' own clocks the skewed one last beat an hour ago.
        peer = jobtable.Runner(store, workers=1, name="peer", lease=5)
        await peer._maintenance.begin()
        await peer._maintenance._round()
        assert store.get(job_id).status is jobtable.Status.RUNNING
        release.set()
        await wait_until(lambda: store.get(job_id).status is jobtable.Status.SUCCEEDED)
    finally:
        release.set()
        skewed.stop()
        await skewed.wait()
        skewed_store.close()
        store.close()
