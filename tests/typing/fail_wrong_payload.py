"""Misuse that must fail: enqueueing a payload that is not the kind's P.

Each line that must fail ends with ``# E: <error code>``.
"""

from pydantic import BaseModel

import jobtable


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Archive(BaseModel):
    paths: list[str]


async def make_thumbnail(ctx: jobtable.JobContext[int], payload: Thumbnail) -> int:
    return payload.size


async def misuse(runner: jobtable.Runner) -> None:
    thumbnails = runner.register("thumbnail", make_thumbnail)
    thumbnails.enqueue(Archive(paths=[]))  # E: call-overload
    thumbnails.enqueue({"photo_id": "p1", "size": 1})  # E: call-overload
    thumbnails.enqueue_many([Archive(paths=[])])  # E: list-item
    await thumbnails.aenqueue("p1")  # E: call-overload
    thumbnails.enqueue_and_wait(Archive(paths=[]), wait_timeout=1)  # E: call-overload
    await thumbnails.aenqueue_and_wait("p1")  # E: call-overload
    thumbnails.wait(1)  # E: call-overload


def misuse_periodic(runner: jobtable.Runner) -> None:
    thumbnail = jobtable.Kind("thumbnail", Thumbnail, int)
    runner.periodic(thumbnail, every=None, payload=Archive(paths=[]))  # E: misc
    payload = Thumbnail(photo_id="p", size=1)
    thumbnail.enqueue_result(runner.store, payload, unique="key")  # E: call-overload
