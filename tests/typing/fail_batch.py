"""Misuse that must fail: batch kinds and their handlers, mixed up with single-job ones.

Each line that must fail ends with ``# E: <error code>``.
"""

import datetime
from collections.abc import Sequence

from pydantic import BaseModel

import jobtable


class Email(BaseModel):
    to: str


class Sent(BaseModel):
    message_id: str


send = jobtable.BatchKind(
    "send", Email, Sent, batch=jobtable.Batch(size=10, max_wait=datetime.timedelta(seconds=1))
)
single = jobtable.Kind("single", Email, Sent)


async def send_all(
    jobs: Sequence[jobtable.BatchJob[Email, Sent]],
) -> list[Sent | jobtable.Failure]:
    return [Sent(message_id=job.ctx.id) for job in jobs]


def send_plain(jobs: Sequence[jobtable.BatchJob[Email, Sent]]) -> list[Sent]:
    return [Sent(message_id=job.ctx.id) for job in jobs]


async def send_one(ctx: jobtable.JobContext[Sent], payload: Email) -> Sent:
    return Sent(message_id=ctx.id)


async def takes_strings(jobs: Sequence[jobtable.BatchJob[str, Sent]]) -> list[Sent]:
    return []


async def returns_one(jobs: Sequence[jobtable.BatchJob[Email, Sent]]) -> Sent:
    return Sent(message_id="")


def returns_numbers(jobs: Sequence[jobtable.BatchJob[Email, Sent]]) -> list[int]:
    return []


def attach(runner: jobtable.Runner) -> None:
    runner.handler(send)(send_all)
    runner.handler(send)(send_plain)
    runner.handler(send)(send_one)  # E: arg-type
    runner.handler(single)(send_all)  # E: arg-type
    runner.handler(send)(takes_strings)  # E: arg-type
    runner.handler(send)(returns_one)  # E: arg-type
    runner.handler(send)(returns_numbers)  # E: arg-type
    jobtable.BatchKind("b", Email, Sent, batch=jobtable.Batch(size=10, max_wait=1.0))  # E: arg-type
    jobtable.BatchKind("b", Email, Sent, batch=send.batch, queue=3)  # E: arg-type
    jobtable.BatchKind("b", Email, Sent)  # E: call-arg


def read(store: jobtable.Store, job_id: str) -> int | None:
    send.enqueue(store, Email(to="to@example.com"))
    send.enqueue(store, "to@example.com")  # E: call-overload
    return send.get(store, job_id).result  # E: return-value
