"""A worker process for test_flow_processes.py: ``Runner.run()`` with a flow control declaration.

Usage: ``python flow_worker.py TARGET NAME WORKERS LOG MODE``

MODE picks the declaration of queue ``work``: ``global`` (concurrency 3),
``partition`` (partition_limit 1), ``rate`` (5 starts per 2 seconds) or
``plain`` (none). Kind ``step`` appends ``start ID KEY TIME`` to LOG as its
attempt begins and ``end ID KEY TIME`` as it ends (TIME is the wall clock,
shared by the processes of one machine), sleeping ``pause`` seconds
between; a payload with ``fail_first`` fails its first attempt. Kind
``hang`` logs its start and then sleeps until the process is killed.
"""

import datetime
import sys
import time

from pydantic import BaseModel

import jobtable


class Step(BaseModel):
    key: str = ""
    pause: float = 0.02
    fail_first: bool = False


FLOW = {
    "global": jobtable.Queue("work", concurrency=3),
    "partition": jobtable.Queue("work", partition_limit=1),
    "rate": jobtable.Queue("work", rate=jobtable.Rate(5, per=datetime.timedelta(seconds=2))),
}


def main() -> None:
    target, name, workers, log, mode = sys.argv[1:]

    def write(line: str) -> None:
        with open(log, "a", encoding="utf-8") as file:
            file.write(line + "\n")

    def step(ctx: jobtable.JobContext[int], payload: Step) -> int:
        write(f"start {ctx.id} {payload.key or '-'} {time.time():.6f}")
        time.sleep(payload.pause)
        write(f"end {ctx.id} {payload.key or '-'} {time.time():.6f}")
        if payload.fail_first and ctx.attempt == 1:
            raise RuntimeError("the first attempt fails")
        return ctx.attempt

    def hang(ctx: jobtable.JobContext[int], payload: Step) -> int:
        write(f"start {ctx.id} {payload.key or '-'} {time.time():.6f}")
        time.sleep(3600)
        return 0

    flow = [FLOW[mode]] if mode in FLOW else []
    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(
            store,
            name=name,
            queues={"work": int(workers)},
            poll_interval=0.05,
            lease=2.0,
            flow=flow,
        )
        runner.register("step", step)
        runner.register("hang", hang)
        runner.run()


if __name__ == "__main__":
    main()
