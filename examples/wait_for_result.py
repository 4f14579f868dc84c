"""Waiting for a job's typed result: ``kind.await_result``, ``enqueue_and_wait`` and their errors.

A request that must answer with a job's result enqueues the job and waits
for it. The wait is woken as the job's outcome commits, wherever its worker
runs: here the worker is a runner in the same process, but a worker process
on the same store wakes it the same way. It shows:

- ``await quote.aenqueue_and_wait(store, payload, wait_timeout=...)``: the
  typed result (a ``Quote``) of a job that succeeded;
- ``await quote.await_result(store, job_id)`` for jobs enqueued earlier,
  waited for together with ``asyncio.gather``;
- ``jobtable.JobFailed``: a handler's ``Failure`` message comes back as the
  error's message, and an ordinary exception's text, here a fake card
  number, does not: the error says only "internal error";
- ``jobtable.WaitTimeout`` for a job no runner takes (a queue nobody works):
  the job stays queued, and the error names it.

Run it with ``.venv/bin/python examples/wait_for_result.py [path/to/app.db or postgresql://…]``;
without an argument it uses a SQLite file in a new temporary directory.
"""

import asyncio
import pathlib
import sys
import tempfile

from pydantic import BaseModel

import jobtable


class Order(BaseModel):
    item: str
    quantity: int


class Quote(BaseModel):
    item: str
    total_cents: int


quote = jobtable.Kind("quote", Order, Quote)


def make_runner(store: jobtable.Store) -> jobtable.Runner:
    """A runner with the handler of quote: it prices an order, or refuses it."""
    runner = jobtable.Runner(store, workers=4)

    @runner.handler(quote)
    async def price(ctx: jobtable.JobContext[Quote], order: Order) -> Quote:
        if order.quantity <= 0:
            raise jobtable.Failure("The quantity must be at least 1.")
        if order.item == "gift card":
            raise RuntimeError("payment gateway refused card 4111-1111-1111-1111")
        return Quote(item=order.item, total_cents=250 * order.quantity)

    return runner


async def tour(store: jobtable.Store) -> None:
    runner = make_runner(store)
    await runner.start()
    try:
        one = await quote.aenqueue_and_wait(store, Order(item="tea", quantity=2), wait_timeout=30)
        print(f"quoted: {one.item}, {one.total_cents} cents")

        ids = [await quote.aenqueue(store, Order(item=i, quantity=1)) for i in ("cup", "pot")]
        quotes = await asyncio.gather(*(quote.await_result(store, i, timeout=30) for i in ids))
        print("quoted together:", ", ".join(f"{q.item} {q.total_cents}" for q in quotes))

        for order in (Order(item="tea", quantity=0), Order(item="gift card", quantity=1)):
            try:
                await quote.aenqueue_and_wait(store, order, wait_timeout=30)
            except jobtable.JobFailed as err:
                print(f"failed, as stored: {err.message!r}")

        try:
            await quote.aenqueue_and_wait(
                store, Order(item="kettle", quantity=1), queue="nobody", wait_timeout=0.2
            )
        except jobtable.WaitTimeout as err:
            print(f"still {store.get(err.job_id).status.value} after {err.timeout:g} s")
    finally:
        runner.stop()
        await runner.wait()


def main() -> None:
    if len(sys.argv) > 1:
        target = sys.argv[1]
    else:
        target = str(pathlib.Path(tempfile.mkdtemp(prefix="jobtable-wait-")) / "app.db")
    with jobtable.Store.open(target) as store:
        asyncio.run(tour(store))


if __name__ == "__main__":
    main()
