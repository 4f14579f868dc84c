"""A worker process for test_batch_killed.py: ``Runner.run()`` with a batch kind's handler.

Usage: ``python batch_worker.py TARGET NAME MARKER``

Kind ``killed-batch`` takes up to 5 jobs a call. Its handler appends one
line ``ID ATTEMPT`` per job of the call to the MARKER file, then waits for
ever, so the process can be killed in the middle of the call.
"""

import asyncio
import datetime
import sys
from collections.abc import Sequence

import jobtable

KILLED = jobtable.BatchKind(
    "killed-batch",
    int,
    int,
    batch=jobtable.Batch(size=5, max_wait=datetime.timedelta(hours=1)),
    max_attempts=2,
)


def main() -> None:
    target, name, marker = sys.argv[1:]

    def mark(jobs: Sequence[jobtable.BatchJob[int, int]]) -> None:
        with open(marker, "a", encoding="utf-8") as file:
            file.writelines(f"{job.ctx.id} {job.ctx.attempt}\n" for job in jobs)

    async def hang(jobs: Sequence[jobtable.BatchJob[int, int]]) -> list[int]:
        mark(jobs)
        await asyncio.sleep(3600)
        return [job.payload for job in jobs]

    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(store, name=name, workers=5, poll_interval=0.05)
        runner.handler(KILLED)(hang)
        runner.run()


if __name__ == "__main__":
    main()
