"""The testing guide's example as written there (docs/guides/testing.md), on the plugin's fixtures.

It tests the handler of the README's first kind (tasks.py and worker.py).
"""

import datetime

import pydantic
import pytest
from doc_blocks import block_holding

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


@pytest.mark.asyncio
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


def test_the_guides_example_passes_as_pasted_into_a_project_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    # A fresh project: no asyncio_mode = "auto", only what the documents show,
    # and the loop scope pytest-asyncio warns about when it is unset.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        tasks=block_holding("# tasks.py").text,
        worker=block_holding("# worker.py").text,
        test_thumbnails=block_holding("def test_thumbnail(").text,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
