"""The PgBouncer trial's waiter: ROUNDS enqueue-and-wait round trips of ``double``.

Usage: ``waiter.py ROUNDS``, configured from the environment as ``worker.py``
is. Each round enqueues one job and waits for the worker, in another
process, to run it; the process exits 0 once every result was right, and
fails at the first wrong one or error.
"""

import os
import sys

import jobtable

double = jobtable.Kind("double", int, int)


def main(rounds: int) -> None:
    store = jobtable.Store.open(
        os.environ["JOBTABLE_STORE"],
        pooled=os.environ.get("JOBTABLE_POOLED") == "1",
        listen_url=os.environ.get("JOBTABLE_LISTEN_URL") or None,
    )
    try:
        for number in range(rounds):
            result = double.enqueue_and_wait(store, number, wait_timeout=60)
            if result != 2 * number:
                sys.exit(f"round {number}: {number} doubled is {result}")
    finally:
        store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
