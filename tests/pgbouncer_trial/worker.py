"""The PgBouncer trial's worker: a runner of ``double`` jobs on a pooled store, until SIGTERM.

Configured as a deploy is, from the environment the ``jobtable`` command
reads too: JOBTABLE_STORE (the pooler's URL), JOBTABLE_POOLED (1) and
JOBTABLE_LISTEN_URL (a direct URL to listen on; unset: polling).
tests/test_pgbouncer.py starts it beside ``waiter.py``.
"""

import os

import jobtable

double = jobtable.Kind("double", int, int)


def main() -> None:
    store = jobtable.Store.open(
        os.environ["JOBTABLE_STORE"],
        pooled=os.environ.get("JOBTABLE_POOLED") == "1",
        listen_url=os.environ.get("JOBTABLE_LISTEN_URL") or None,
    )
    try:
        runner = jobtable.Runner(store, workers=2, poll_interval=0.2)

        @runner.handler(double)
        def run(ctx: jobtable.JobContext[int], payload: int) -> int:
            return 2 * payload

        runner.run()
    finally:
        store.close()


if __name__ == "__main__":
    main()
