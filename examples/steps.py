"""Steps: a retried attempt resumes where the last one stopped.

A checkout job charges a card, then emails a receipt. Each is a step
(``await ctx.step(name, fn, arg)``): the first time, the runner runs it and
records its typed output with the job, under the attempt's claim;
a later attempt of the same job gets the recorded output back instead of
running it again. Here the mail server hangs up at the first attempt, so
the attempt fails after the card was charged; the retry does not charge
the card again, it only sends the email. ``ctx.last_partial`` tells the
retry where the failed attempt had got to.

The mail server's error text goes to the log (stderr), never to the
database: the job's error history holds "internal error".

Run it with ``.venv/bin/python examples/steps.py [path/to/steps.db]``.
"""

import asyncio
import datetime
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel

import jobtable


class Order(BaseModel):
    order_id: str
    amount_cents: int


class Checkout(BaseModel):
    stage: str
    charge_id: str
    emailed: bool = False


# Retried at once, up to three attempts in all.
checkout = jobtable.Kind(
    "checkout", Order, Checkout, max_attempts=3, retry=lambda attempt: datetime.timedelta(0)
)

CALLS: list[str] = []
"""Which step functions ran, in order: what the example shows at the end."""


def charge_card(order: Order) -> str:
    CALLS.append("charge")
    return f"ch_{order.order_id}_{order.amount_cents}"


async def send_receipt(charge_id: str) -> bool:
    CALLS.append("email")
    if CALLS.count("email") == 1:
        raise ConnectionError("smtp.example: the server hung up")
    return True


def make_runner(store: jobtable.Store, finished: asyncio.Event) -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=1, poll_interval=0.05)

    @runner.hooks.on_outcome
    def the_end(outcome: jobtable.AttemptOutcome) -> None:
        if outcome.outcome in ("succeeded", "failed"):
            finished.set()

    @runner.handler(checkout)
    async def run_checkout(ctx: jobtable.JobContext[Checkout], order: Order) -> Checkout:
        last = ctx.last_partial
        if last is not None:
            print(f"attempt {ctx.attempt} resumes after stage {last.stage!r}")
        charge_id = await ctx.step("charge", charge_card, order)
        await ctx.apublish(Checkout(stage="charged", charge_id=charge_id))
        emailed = await ctx.step("email", send_receipt, charge_id)
        return Checkout(stage="done", charge_id=charge_id, emailed=emailed)

    return runner


async def main(path: Path) -> None:
    with jobtable.Store.open(path) as store:
        finished = asyncio.Event()
        runner = make_runner(store, finished)
        job_id = checkout.enqueue(store, Order(order_id="A-17", amount_cents=4200))
        await runner.start()
        try:
            await finished.wait()
        finally:
            runner.stop()  # a graceful stop: it stores the last outcome first
            await runner.wait()
        record = await store.ainspect(job_id)
    print(f"job {record.status.value} after {record.attempt} attempts: {record.result}")
    for entry in record.errors:
        print(f"attempt {entry.attempt} failed: {entry.error}")
    for step in record.steps:
        print(f"step {step.name!r} ran at attempt {step.attempt}: {step.output}")
    print(f"step functions called: {', '.join(CALLS)}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(main(Path(folder) / "steps.db"))
