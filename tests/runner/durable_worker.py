"""A worker process for test_durable_waiting_killed.py: ``Runner.run()`` whose jobs sleep and wait.

Usage: ``python durable_worker.py TARGET NAME MARKER``

Kind ``nap`` takes its step "before" (it appends ``before ID`` to MARKER),
sleeps payload seconds, then appends ``after ID``. Kind ``hold`` takes the
same step, then waits for the signal ``go`` under its payload.
"""

import datetime
import sys

from pydantic import BaseModel

import jobtable


class Go(BaseModel):
    word: str


GO = jobtable.Signal("go", Go)
NAP = jobtable.Kind("nap", float, str)
HOLD = jobtable.Kind("hold", str, str)


def handlers(runner: jobtable.Runner, marker: str) -> None:
    """Attaches nap's and hold's handlers, which write to marker."""

    def write(line: str) -> str:
        with open(marker, "a", encoding="utf-8") as file:
            file.write(line + "\n")
        return line

    @runner.handler(NAP)
    async def nap(ctx: jobtable.JobContext[str], payload: float) -> str:
        await ctx.step("before", write, f"before {ctx.id}")
        await ctx.sleep_for(datetime.timedelta(seconds=payload))
        write(f"after {ctx.id}")
        return "rested"

    @runner.handler(HOLD)
    def hold(ctx: jobtable.JobContext[str], payload: str) -> str:
        ctx.step_sync("before", write, f"before {ctx.id}")
        go = ctx.wait_for_sync(GO, key=payload)
        write(f"after {ctx.id}")
        return go.word


def main() -> None:
    target, name, marker = sys.argv[1:]
    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(store, name=name, workers=2, poll_interval=0.05)
        handlers(runner, marker)
        runner.run()


if __name__ == "__main__":
    main()
