"""A worker process for test_steps_killed.py: ``Runner.run()`` whose handler takes a step.

Usage: ``python step_worker.py TARGET NAME MARKER``

Kind ``stepped`` runs its step "fetch", which appends ``ID ATTEMPT`` to the
MARKER file as it starts. For payload 0 the step then waits for ever, so
the process can be killed inside it; for any other payload the step
returns, and the handler publishes ``"recorded"`` (the step is recorded
by then) and waits for ever, so the process can be killed after it.
"""

import asyncio
import sys

import jobtable

STEPPED = jobtable.Kind("stepped", int, str, max_attempts=2)


def main() -> None:
    target, name, marker = sys.argv[1:]

    def mark(ctx: jobtable.JobContext[str]) -> None:
        with open(marker, "a", encoding="utf-8") as file:
            file.write(f"{ctx.id} {ctx.attempt}\n")

    async def stepped(ctx: jobtable.JobContext[str], payload: int) -> str:
        async def fetch(n: int) -> int:
            mark(ctx)
            if n == 0:
                await asyncio.sleep(3600)
            return n * 10

        output = await ctx.step("fetch", fetch, payload)
        await ctx.apublish("recorded")
        await asyncio.sleep(3600)
        return str(output)

    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(store, name=name, workers=2, poll_interval=0.05)
        runner.handler(STEPPED)(stepped)
        runner.run()


if __name__ == "__main__":
    main()
