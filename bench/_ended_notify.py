"""What the outcome's NOTIFY costs the PostgreSQL completer: ``python -m bench._ended_notify``.

The finish statement (FinishAndClaimJobs) notifies the ids of the jobs it
ended, so that waiters wake as the outcome commits. This runs the end-to-end
drain of no-op jobs (``bench._end_to_end``) with that statement as it is and
with its NOTIFY taken out (the module's statement text swapped in this
process only), alternately, round after round in one sitting, and prints
each one's median jobs per second and their ratio.

``python -m bench._ended_notify [JOBS] [WORKERS] [ROUNDS]`` (4000, 4, 5)
"""

import statistics
import sys

from bench import _databases
from bench._end_to_end import end_to_end
from jobtable.db.postgres import jobs

_ENDED = """,
ended AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
        WHEN sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\\n') ELSE '' END)
    FROM finished WHERE status <> 'queued' HAVING count(*) > 0
)"""

STATEMENTS = ("FINISH_AND_CLAIM_JOBS", "FINISH_AND_CLAIM_JOBS_OF_KINDS")


def _without_notify(text: str) -> str:
    """The statement without its ended CTE and the join that runs it."""
    if _ENDED not in text:
        raise RuntimeError("the finish statement changed: update bench._ended_notify")
    return text.replace(_ENDED, "").replace(" LEFT JOIN ended ON true", "")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    shipped = {name: getattr(jobs, name) for name in STATEMENTS}
    stripped = {name: _without_notify(text) for name, text in shipped.items()}
    rates: dict[str, list[float]] = {"with NOTIFY": [], "without": []}
    db = _databases.create("postgres")
    try:
        for _ in range(rounds):
            for label, texts in (("with NOTIFY", shipped), ("without", stripped)):
                for name, text in texts.items():
                    setattr(jobs, name, text)
                rates[label].append(end_to_end(db, db.store, workers, count)[0])
    finally:
        for name, text in shipped.items():
            setattr(jobs, name, text)
        db.close()
    for label, values in rates.items():
        print(f"{label}: median {statistics.median(values):,.0f} jobs/s over {rounds} rounds")
    ratio = statistics.median(rates["with NOTIFY"]) / statistics.median(rates["without"])
    print(f"with / without: {ratio:.2f}")


if __name__ == "__main__":
    main()
