"""Where a single caller's enqueue spends its time: ``python -m bench._breakdown [engine] [calls]``.

engine is sqlite, postgres, or sqlite-normal: SQLite with synchronous=NORMAL
on both sides, so no commit waits for a sync and the CPU's costs stand out.

Each line peels one layer off ``Kind.enqueue`` and times it alone, one call
at a time, in µs per call (median of 5 interleaved rounds), so the
differences between lines are the layers' costs:

- the raw statement as ``make bench``'s raw loop runs it (SQLite: an
  autocommit INSERT; PostgreSQL: an autocommit INSERT, one round trip);
- the same INSERT inside the transaction shape the engine uses (SQLite:
  BEGIN IMMEDIATE, SAVEPOINT, INSERT, RELEASE, COMMIT on the caller's thread;
  PostgreSQL: BEGIN, INSERT, COMMIT);
- ``engine.write`` of the op enqueue hands it (``CreateJob``: on
  PostgreSQL one INSERT without BEGIN and COMMIT, through group commit's
  leader), and of a plain function that runs CreateJob (PostgreSQL: BEGIN,
  INSERT, COMMIT on a pooled connection; SQLite: the same as the first);
- ``engine.write`` of an op that does nothing (SQLite: the hop and an empty
  transaction, which SQLite commits without a sync; PostgreSQL: checkout
  and BEGIN/COMMIT);
- what enqueue does before writing: pydantic's encode and check, the id and
  the timestamp;
- ``Kind.enqueue`` whole.
"""

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench import _db
from bench._jobs import Ping, make_runner
from jobtable._engines.rows import NewJob
from jobtable._operations import create_jobs
from jobtable.db.postgres import jobs as pg_sql
from jobtable.db.sqlite import jobs as sqlite_sql


def _per_call(fn: Callable[[], object], calls: int) -> float:
    begin = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - begin) / calls * 1e6


def _steps(db: _db.Database, synchronous: str) -> list[tuple[str, Callable[[], object]]]:
    kinds = make_runner(db.store, workers=1, name="bench-breakdown")
    payload = Ping()
    engine = db.store.engine
    kind = kinds.noop
    binding = kind._binding  # a kind registered on a runner is bound to its store
    assert binding is not None

    def create_job(q: Any) -> None:
        moment = _db.utc_text()
        q.insert_jobs(kind=_db.KIND, jobs=[NewJob(_db.new_id(), _db.PAYLOAD, moment)], now=moment)

    steps: list[tuple[str, Callable[[], object]]] = []
    if isinstance(db, _db.SQLiteDatabase):
        conn = db._connect(synchronous)
        ex = conn.execute

        def raw() -> None:
            ex(sqlite_sql.CREATE_JOB, _db._sqlite_job())

        def shaped() -> None:
            ex("BEGIN IMMEDIATE")
            ex("SAVEPOINT jobtable_op")
            ex(sqlite_sql.CREATE_JOB, _db._sqlite_job())
            ex("RELEASE jobtable_op")
            ex("COMMIT")

        steps += [
            ("raw INSERT, autocommit (make bench's raw)", raw),
            ("BEGIN IMMEDIATE/SAVEPOINT/INSERT/RELEASE/COMMIT, caller's thread", shaped),
        ]
    elif isinstance(db, _db.PostgresDatabase):
        pconn = db._connect()
        pex = pconn.execute

        def params() -> dict[str, Any]:
            return _db._pg_job()

        def praw() -> None:
            pex(pg_sql.CREATE_JOB, params())

        def pshaped() -> None:
            with pconn.transaction():
                pex(pg_sql.CREATE_JOB, params())

        steps += [
            ("raw INSERT, autocommit (make bench's raw)", praw),
            ("BEGIN/INSERT/COMMIT, own connection", pshaped),
        ]

    def create_op() -> None:
        moment = _db.utc_text()
        engine.write(create_jobs(_db.KIND, [NewJob(_db.new_id(), _db.PAYLOAD, moment)], moment))

    steps += [
        ("engine.write(CreateJob), enqueue's own op", create_op),
        ("engine.write(CreateJob in a plain function)", lambda: engine.write(create_job)),
        ("engine.write(nothing)", lambda: engine.write(lambda q: None)),
        ("encode + id (Kind._create)", lambda: kind._create("enqueue", binding, [payload], {})),
        ("Kind.enqueue", lambda: kind.enqueue(payload)),
    ]
    return steps


def _pg_now() -> Any:
    import datetime

    return datetime.datetime.now(datetime.UTC)


def main() -> None:
    engine = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    synchronous = "FULL"
    if engine == "sqlite-normal":
        # Both sides without a sync per commit: what is left is the CPU's cost.
        db: _db.Database = _db.SQLiteDatabase.create(durable=False)
        synchronous = "NORMAL"
    else:
        db = _db.create(engine)
    try:
        steps = _steps(db, synchronous)
        times: dict[str, list[float]] = {name: [] for name, _ in steps}
        for _ in range(5):
            for name, fn in steps:
                times[name].append(_per_call(fn, calls))
                db.reset()
        for name, _ in steps:
            print(f"{statistics.median(times[name]):8.1f} µs  {name}")
    finally:
        db.close()


if __name__ == "__main__":
    main()
