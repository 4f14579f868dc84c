"""A worker process for test_uncooperative_processes.py whose async handlers will not stop.

Usage: ``python uncooperative_worker.py TARGET``

Kind ``swallow`` publishes ``"in handler"`` (so a test knows the job is
inside its handler), then ignores every cancel for ever (a broad ``except
BaseException``). Kind ``block`` publishes the same, then blocks the event
loop in ``time.sleep``. Kind ``quick`` returns its payload doubled. The
runner has one worker, a grace period of 1 s and a cancel grace of 1 s, and
warns of a loop blocked for 0.5 s. Log records go to stderr with their job
fields; after ``run`` returns the process prints ``run returned``.
"""

import asyncio
import logging
import sys
import time

import jobtable

swallow = jobtable.Kind("swallow", int, str)
block = jobtable.Kind("block", int, str)
quick = jobtable.Kind("quick", int, int)


async def swallowing(ctx: jobtable.JobContext[str], payload: int) -> str:
    await ctx.apublish("in handler")
    while True:
        try:
            await asyncio.sleep(3600)
        except BaseException:
            continue


async def blocking(ctx: jobtable.JobContext[str], payload: int) -> str:
    await ctx.apublish("in handler")
    time.sleep(3600)  # noqa: ASYNC251 (the misbehaviour under test)
    return "unreachable"


async def doubling(ctx: jobtable.JobContext[int], payload: int) -> int:
    return 2 * payload


def main() -> None:
    [target] = sys.argv[1:]
    handler = logging.StreamHandler()
    handler.setFormatter(
        logging.Formatter(
            "%(levelname)s %(message)s [job_id=%(job_id)s kind=%(kind)s]",
            defaults={"job_id": "-", "kind": "-"},
        )
    )
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(
            store,
            name="uncooperative",
            workers=1,
            grace_period=1.0,
            cancel_grace=1.0,
            block_warning=0.5,
            poll_interval=0.05,
            cancel_check=0.05,
        )
        runner.handler(swallow)(swallowing)
        runner.handler(block)(blocking)
        runner.handler(quick)(doubling)
        runner.run()
    print("run returned", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
