"""The README's "Testing your handlers" example as written there, on the plugin's fixtures."""

import datetime
import pathlib
import re

import pydantic
import pytest

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


def _readme_block(holding: str) -> str:
    """The README's first python block that holds the text holding, verbatim."""
    readme = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
    blocks: list[str] = re.findall(r"```python\n(.*?)```", readme, re.S)
    return next(b for b in blocks if holding in b)


def test_the_readmes_example_passes_as_pasted_into_a_project_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    # A fresh project: no asyncio_mode = "auto", only what the README shows,
    # and the loop scope pytest-asyncio warns about when it is unset.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        tasks=_readme_block("# tasks.py"),
        worker=_readme_block("# worker.py"),
        test_thumbnails=_readme_block("def test_thumbnail("),
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
