"""Misuse of signals and durable waits that mypy must refuse.

Each line that must fail ends with ``# E: <error code>``.
"""

import datetime

from pydantic import BaseModel

import jobtable


class Decision(BaseModel):
    approved: bool


class Other(BaseModel):
    note: str


decided = jobtable.Signal("decided", Decision)


async def handler(ctx: jobtable.JobContext[str], payload: str) -> str:
    # With a timeout the answer may be TimedOut: read only after telling them apart.
    answer = await ctx.wait_for(decided, key=payload, timeout=datetime.timedelta(hours=1))
    print(answer.approved)  # E: union-attr
    # Without one it is the payload itself, of the signal's type.
    plain: Other = await ctx.wait_for(decided, key=payload)  # E: arg-type
    # A key is a str, given by name.
    await ctx.wait_for(decided, payload)  # E: call-overload
    await ctx.wait_for(decided, key=1)  # E: call-overload
    # A sleep takes a datetime or a timedelta, never bare seconds.
    await ctx.sleep_for(5)  # E: arg-type
    await ctx.sleep_until(5.0)  # E: arg-type
    return str(plain)


def sync_handler(ctx: jobtable.JobContext[str], payload: str) -> str:
    answer = ctx.wait_for_sync(decided, key=payload, timeout=datetime.timedelta(seconds=1))
    return str(answer.approved)  # E: union-attr


def send(store: jobtable.Store) -> None:
    store.signal(decided, "k", Other(note="x"))  # E: misc
    store.signal(decided, 1, Decision(approved=True))  # E: arg-type
    jobtable.Signal("bad", Decision).encode(Other(note="x"), None)  # E: arg-type
