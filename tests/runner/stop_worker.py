"""A worker process for test_stop_signals.py whose ``def`` handler never returns.

Usage: ``python stop_worker.py TARGET``

Kind ``block`` publishes ``"in handler"`` (so a test knows the job is inside
its handler), then blocks on an event nothing sets, ignoring ctx.stopping.
The runner has a grace period of 1 s. After ``run`` returns the process
prints ``run returned`` to stderr and exits: nothing may hold it open.
"""

import sys
import threading

import jobtable


def block(ctx: jobtable.JobContext[str], payload: int) -> str:
    ctx.publish("in handler")
    threading.Event().wait()
    return "unreachable"


def main() -> None:
    [target] = sys.argv[1:]
    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(
            store, name="blocked", workers=2, grace_period=1.0, poll_interval=0.05
        )
        runner.register("block", block)
        runner.run()
    print("run returned", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
