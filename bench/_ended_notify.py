"""What the outcome's NOTIFY costs the PostgreSQL completer: ``python -m bench._ended_notify``.

The finish statement (FinishAndClaimJobs) notifies the ids of the jobs it
ended while some process waits, so that waiters wake as the outcome
commits. This drains no-op jobs end to end (``bench._end_to_end``) three
ways: with the NOTIFY taken out (the module's statement text swapped in this
process only); as shipped while no process waits (the statement then only
tries an advisory lock); and as shipped while another connection runs
ListenForEndedJobs and reads the notifications, as a waiting process's
listener does (the statement then notifies). Round after round in one
sitting, each round starting with the next way; it prints each way's median
jobs per second and its ratio to the first.

``python -m bench._ended_notify [JOBS] [WORKERS] [ROUNDS]`` (4000, 4, 5)
"""

import statistics
import sys
import threading

import psycopg

from bench import _databases, _db
from bench._end_to_end import end_to_end
from jobtable.db.postgres import jobs, schema_version

_ENDED = """,
ended AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
        WHEN sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\\n') ELSE '' END)
    FROM finished WHERE status <> 'queued'
    HAVING count(*) > 0 AND NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() %% 16)
)"""

STATEMENTS = ("FINISH_AND_CLAIM_JOBS", "FINISH_AND_CLAIM_JOBS_OF_KINDS")


def _without_notify(text: str) -> str:
    """The statement without its ended CTE and the join that runs it."""
    if _ENDED not in text:
        raise RuntimeError("the finish statement changed: update bench._ended_notify")
    return text.replace(_ENDED, "").replace(" LEFT JOIN ended ON true", "")


def _listen(target: str, listening: threading.Event, stop: threading.Event) -> None:
    """What a waiting process's listener does: ListenForEndedJobs, then reads until stop."""
    with psycopg.connect(target, autocommit=True) as conn:
        schema_version.Querier(conn).listen_for_ended_jobs()
        listening.set()
        while not stop.is_set():
            for _ in conn.notifies(timeout=0.1):
                pass


def _round(db: _db.Database, workers: int, count: int, waiting: bool) -> float:
    """One drain's jobs per second; with waiting, while another connection waits for ends."""
    if not waiting:
        return end_to_end(db, db.store, workers, count)[0]
    listening, stop = threading.Event(), threading.Event()
    listener = threading.Thread(target=_listen, args=(db.target, listening, stop))
    listener.start()
    try:
        listening.wait(30)
        return end_to_end(db, db.store, workers, count)[0]
    finally:
        stop.set()
        listener.join()


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    shipped = {name: getattr(jobs, name) for name in STATEMENTS}
    stripped = {name: _without_notify(text) for name, text in shipped.items()}
    ways = (
        ("without the NOTIFY", stripped, False),
        ("as shipped, no process waits", shipped, False),
        ("as shipped, a process waits", shipped, True),
    )
    rates: dict[str, list[float]] = {label: [] for label, _, _ in ways}
    db = _databases.create("postgres")
    try:
        for r in range(rounds):
            # Each round starts with the next way, so none always follows the same one.
            for label, texts, waiting in ways[r % 3 :] + ways[: r % 3]:
                for name, text in texts.items():
                    setattr(jobs, name, text)
                rates[label].append(_round(db, workers, count, waiting))
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
