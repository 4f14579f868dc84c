"""A worker process for test_workflow_processes.py: ``Runner.run()`` with the workflow's kinds.

Usage: ``python workflow_worker.py TARGET NAME MODE``. Kind ``first`` returns
its payload doubled; kind ``second`` (its payload fed by first's result)
returns its payload plus one. MODE ``first`` handles (and claims) first
only; ``both`` both kinds.
"""

import sys

import jobtable

first = jobtable.Kind("first", int, int)
second = jobtable.Kind("second", int, int, max_attempts=3)


def main() -> None:
    target, name, mode = sys.argv[1:]
    with jobtable.Store.open(target) as store:
        runner = jobtable.Runner(
            store, name=name, workers=1, poll_interval=0.05, lease=2.0, only_kinds=True
        )

        @runner.handler(first)
        def do_first(ctx: jobtable.JobContext[int], n: int) -> int:
            return 2 * n

        def do_second(ctx: jobtable.JobContext[int], n: int) -> int:
            return n + 1

        if mode == "both":
            runner.handler(second)(do_second)

        runner.run()


if __name__ == "__main__":
    main()
