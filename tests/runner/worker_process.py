"""A worker process for test_processes.py: ``Runner.run()`` over a store until a signal.

Usage: ``python worker_process.py TARGET NAME WORKERS LEASE MARKER``

Kind ``hold`` publishes ``"in handler"`` (so a test knows the job is inside
its handler), then sleeps until the runner stops and returns
``"stopped gracefully"``. Kind ``mark`` appends its job's id to the MARKER
file, one line per run, and returns its payload.
"""

import sys

import jobtable


async def hold(ctx: jobtable.JobContext[str], payload: int) -> str:
    await ctx.apublish("in handler")
    stopping = await ctx.asleep(3600)
    return "stopped gracefully" if stopping else "slept an hour"


def main() -> None:
    target, name, workers, lease, marker = sys.argv[1:]

    def mark(ctx: jobtable.JobContext[int], payload: int) -> int:
        with open(marker, "a", encoding="utf-8") as file:
            file.write(ctx.id + "\n")
        return payload

    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(
            store, name=name, workers=int(workers), lease=float(lease), poll_interval=0.05
        )
        runner.register("hold", hold)
        runner.register("mark", mark)
        runner.run()


if __name__ == "__main__":
    main()
