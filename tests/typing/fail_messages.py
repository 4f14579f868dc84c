"""Misuse that must fail, with the message mypy gives, as the troubleshooting guide quotes it.

Each line that must fail ends with ``# E: <error code> "<part of the message>"``.
"""

import datetime

from pydantic import BaseModel

import jobtable


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int


thumbnail = jobtable.Kind("thumbnail", Thumbnail, Progress)


def def_returns_a_number(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> int:
    return payload.size


async def async_takes_a_string(ctx: jobtable.JobContext[Progress], payload: str) -> Progress:
    return Progress(done=0, total=0)


def misuse(runner: jobtable.Runner, store: jobtable.Store) -> None:
    # A handler is checked against the first form, async def's: the message
    # names Awaitable[Progress] even for a plain def, whose fault is its int.
    attach = runner.handler(thumbnail)
    attach(def_returns_a_number)  # E: arg-type "Thumbnail], Awaitable[Progress]]"
    attach(async_takes_a_string)  # E: arg-type "Progress], str], Coroutine"
    # A payload of another type for a schedule: mypy cannot solve P from both.
    hourly, progress = datetime.timedelta(hours=1), Progress(done=1, total=1)
    runner.periodic(thumbnail, every=hourly, payload=progress)  # E: misc "Cannot infer"
    thumbnail.enqueue(store, progress)  # E: call-overload "matches argument types"
