"""The README's "Testing your handlers" example as written there, on the plugin's fixtures."""

import datetime

import pydantic

import jobtable
from jobtable.testing import FrozenClock, assert_enqueued, drain


class Thumbnail(pydantic.BaseModel):
    photo_id: str
    size: int


class Progress(pydantic.BaseModel):
    done: int
    total: int
    url: str | None = None


thumbnail = jobtable.Kind("thumbnail", Thumbnail, Progress)


async def make_thumbnail(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> Progress:
    for done in range(3):
        await ctx.apublish(Progress(done=done, total=3))
    if payload.size > 4096:
        raise jobtable.Failure("That size is too large.")
    return Progress(done=3, total=3, url=f"/thumbs/{payload.photo_id}")


async def test_thumbnail(jobtable_store: jobtable.Store, jobtable_clock: FrozenClock) -> None:
    runner = jobtable.Runner(jobtable_store)
    runner.handler(thumbnail)(make_thumbnail)
    thumbnail.enqueue(jobtable_store, Thumbnail(photo_id="p1", size=256))
    later = thumbnail.enqueue(
        jobtable_store, Thumbnail(photo_id="p2", size=64), delay=datetime.timedelta(hours=1)
    )

    assert_enqueued(jobtable_store, thumbnail, Thumbnail(photo_id="p1", size=256))
    assert_enqueued(jobtable_store, thumbnail, like={"size": 64})  # part of the payload
    [done] = await drain(runner)  # runs what is due: p2 waits for its hour
    assert done.result == Progress(done=3, total=3, url="/thumbs/p1").model_dump()

    jobtable_clock.advance(hours=1)
    assert [record.id for record in await drain(runner)] == [later]
