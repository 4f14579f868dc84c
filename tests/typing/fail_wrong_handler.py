"""Misuse that must fail: attaching a handler whose annotations do not match the kind's P and R.

Each line that must fail ends with ``# E: <error code>``.
"""

from pydantic import BaseModel

import jobtable


class Thumbnail(BaseModel):
    photo_id: str
    size: int


class Progress(BaseModel):
    done: int
    total: int


thumbnail = jobtable.Kind("thumbnail", Thumbnail, Progress)


async def takes_a_string(ctx: jobtable.JobContext[Progress], payload: str) -> Progress:
    return Progress(done=0, total=0)


def returns_a_number(ctx: jobtable.JobContext[Progress], payload: Thumbnail) -> int:
    return payload.size


async def publishes_numbers(ctx: jobtable.JobContext[int], payload: Thumbnail) -> Progress:
    return Progress(done=0, total=0)


def attach(runner: jobtable.Runner) -> None:
    runner.handler(thumbnail)(takes_a_string)  # E: arg-type
    runner.handler(thumbnail)(returns_a_number)  # E: arg-type
    runner.handler(thumbnail)(publishes_numbers)  # E: arg-type

    @runner.handler(thumbnail)  # E: arg-type
    async def decorated(ctx: jobtable.JobContext[Progress], payload: int) -> Progress:
        return Progress(done=payload, total=payload)
