"""A worker or a waiter process over a pooled store, for the PgBouncer round-trip tests.

Usage: ``pgbouncer_process.py worker|waiter POOLED_URL [LISTEN_URL] [ROUNDS]``.
The worker runs ``double`` jobs until SIGTERM; the waiter makes ROUNDS
enqueue-and-wait round trips of ``double`` and exits 0 when every result
was right. An empty LISTEN_URL opens the store without one (polling).
"""

import sys

import jobtable

double = jobtable.Kind("double", int, int)


def open_store(pooled: str, listen: str) -> jobtable.Store:
    """The pooled store, listening on listen when it is not empty."""
    return jobtable.Store.open(pooled, pooled=True, listen_url=listen or None)


def wait_rounds(store: jobtable.Store, rounds: int) -> None:
    """Makes rounds round trips; raises AssertionError at a wrong result."""
    for number in range(rounds):
        result = double.enqueue_and_wait(store, number, wait_timeout=60)
        assert result == 2 * number, f"round {number}: {result}"


def main(role: str, pooled: str, listen: str, rounds: int) -> None:
    store = open_store(pooled, listen)
    try:
        if role == "waiter":
            wait_rounds(store, rounds)
            return
        runner = jobtable.Runner(store, workers=2, poll_interval=0.2)

        @runner.handler(double)
        def run_double(ctx: jobtable.JobContext[int], payload: int) -> int:
            return 2 * payload

        runner.run()
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
