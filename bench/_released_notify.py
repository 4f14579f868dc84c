"""What the finish's 'ready:' NOTIFY costs a limited queue: ``python -m bench._released_notify``.

On PostgreSQL the finish statement (FinishAndClaimJobs) notifies the
runners' channel with 'ready:' and a queue's name when the job it finished
may release a held one: a job of a queue with a concurrency or partition
limit (a slot is free), or of a sequence whose next job is queued. This
drains no-op jobs end to end (``bench._end_to_end``) three ways: on an
unlimited queue (the statement sends nothing); on a queue whose concurrency
limit is far above the drain's workers, so it holds nothing back, with the
notification taken out (the module's statement text swapped in this process
only); and that queue as shipped (each finish notifies). Round after round
in one sitting, each round starting with the next way; it prints each way's
median jobs per second and its ratio to the unlimited queue's.

``python -m bench._released_notify [JOBS] [WORKERS] [ROUNDS]`` (3000, 4, 5)
"""

import re
import statistics
import sys

from bench import _databases
from bench._end_to_end import end_to_end
from jobtable.db.postgres import jobs

STATEMENTS = ("FINISH_AND_CLAIM_JOBS", "FINISH_AND_CLAIM_JOBS_OF_KINDS")
_RELEASED = re.compile(r",\nreleased AS MATERIALIZED \(.*?\n\),\n", re.S)
QUEUE = "default"
"""The queue of the benchmark's no-op kind."""


def _without_notify(text: str) -> str:
    """The statement without its released CTE and the join that runs it."""
    stripped, count = _RELEASED.subn(",\n", text)
    if count != 1 or " LEFT JOIN released ON true" not in stripped:
        raise RuntimeError("the finish statement changed: update bench._released_notify")
    return stripped.replace(" LEFT JOIN released ON true", "")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    shipped = {name: getattr(jobs, name) for name in STATEMENTS}
    stripped = {name: _without_notify(text) for name, text in shipped.items()}
    ways = (
        ("unlimited queue (sends nothing)", shipped, False),
        ("limited queue, without the NOTIFY", stripped, True),
        ("limited queue, as shipped (notifies)", shipped, True),
    )
    rates: dict[str, list[float]] = {label: [] for label, _, _ in ways}
    db = _databases.create("postgres")
    try:
        for r in range(rounds):
            # Each round starts with the next way, so none always follows the same one.
            for label, texts, limited in ways[r % 3 :] + ways[: r % 3]:
                for name, text in texts.items():
                    setattr(jobs, name, text)
                if limited:
                    db.store.set_limits(QUEUE, concurrency=100_000)
                else:
                    db.store.clear_limits(QUEUE)
                rates[label].append(end_to_end(db, db.store, workers, count)[0])
    finally:
        for name, text in shipped.items():
            setattr(jobs, name, text)
        db.close()
    base = statistics.median(rates[ways[0][0]])
    for label, values in rates.items():
        rate = statistics.median(values)
        spread = f"{min(values):,.0f} to {max(values):,.0f}"
        print(f"{label}: median {rate:,.0f} jobs/s ({spread}), {rounds} rounds, {rate / base:.2f}x")


if __name__ == "__main__":
    main()
