"""Misuse that must fail: publishing a partial result or returning a result that is not R.

Each line that must fail ends with ``# E: <error code>``.
"""

from pydantic import BaseModel

import jobtable


class Progress(BaseModel):
    done: int
    total: int


async def publishes_a_number(ctx: jobtable.JobContext[Progress], payload: int) -> Progress:
    await ctx.apublish(payload)  # E: arg-type
    return Progress(done=payload, total=payload)


def publishes_a_dict(ctx: jobtable.JobContext[Progress], payload: int) -> Progress:
    ctx.publish({"done": 1, "total": 2})  # E: arg-type
    return Progress(done=payload, total=payload)


def reads_the_result_as_the_wrong_type(kind: jobtable.Kind[int, Progress], job_id: str) -> int:
    job = kind.get(job_id)
    return job.result  # E: return-value
