"""An enqueuer process for test_debounce_races.py: debounces the same keys as its peers at once.

Usage: ``python debounce_racer.py TARGET ROUNDS GO OUT``

Opens the store, waits until the file GO exists (so every racer starts
together), then enqueues one ``bounce`` job per round debounced on the key
``round-N`` (odd rounds through enqueue_many_results), and writes one line
per round to OUT: the round, the id it was told and whether it joined an
earlier job, as JSON.
"""

import datetime
import json
import pathlib
import sys
import time

import jobtable

bounce = jobtable.Kind("bounce", int, int)


def main() -> None:
    target, rounds, go, out = sys.argv[1:]
    with jobtable.Store.open(target) as store:
        deadline = time.monotonic() + 60
        while not pathlib.Path(go).exists():
            if time.monotonic() > deadline:
                raise SystemExit("the GO file never appeared")
            time.sleep(0.001)
        lines = []
        for n in range(int(rounds)):
            quiet = jobtable.Debounce(quiet=datetime.timedelta(hours=1), key=f"round-{n}")
            if n % 2:
                [result] = bounce.enqueue_many_results(store, [n], debounce=quiet)
            else:
                result = bounce.enqueue_result(store, n, debounce=quiet)
            lines.append(json.dumps([n, result.id, result.duplicate]))
        pathlib.Path(out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
