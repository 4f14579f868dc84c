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

from bench import _databases, _db, _postgres_db, _sqlite_db
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


Step = tuple[str, Callable[[], object]]
"""A line of the breakdown: its label, and the call it times."""


def _sqlite_raw_steps(db: _sqlite_db.SQLiteDatabase, synchronous: str) -> list[Step]:
    """The raw INSERT on a connection of its own, alone and in the engine's transaction shape."""
    ex = db._connect(synchronous).execute

    def raw() -> None:
        ex(sqlite_sql.CREATE_JOB, _sqlite_db.create_params())

    def shaped() -> None:
        ex("BEGIN IMMEDIATE")
        ex("SAVEPOINT jobtable_op")
        ex(sqlite_sql.CREATE_JOB, _sqlite_db.create_params())
        ex("RELEASE jobtable_op")
        ex("COMMIT")

    return [
        ("raw INSERT, autocommit (make bench's raw)", raw),
        ("BEGIN IMMEDIATE/SAVEPOINT/INSERT/RELEASE/COMMIT, caller's thread", shaped),
    ]


def _postgres_raw_steps(db: _postgres_db.PostgresDatabase) -> list[Step]:
    """The raw INSERT on a connection of its own, autocommit and in a transaction."""
    pconn = db._connect()
    pex = pconn.execute

    def praw() -> None:
        pex(pg_sql.CREATE_JOB, _postgres_db.create_params())

    def pshaped() -> None:
        with pconn.transaction():
            pex(pg_sql.CREATE_JOB, _postgres_db.create_params())

    return [
        ("raw INSERT, autocommit (make bench's raw)", praw),
        ("BEGIN/INSERT/COMMIT, own connection", pshaped),
    ]


def _library_steps(db: _db.Database) -> list[Step]:
    """The library's layers, from engine.write of enqueue's own op up to Kind.enqueue."""
    kinds = make_runner(db.store, workers=1, name="bench-breakdown")
    payload = Ping()
    engine = db.store.engine
    kind = kinds.noop
    binding = kind._binding  # a kind registered on a runner is bound to its store
    assert binding is not None

    def create_job(q: Any) -> None:
        moment = _db.utc_text()
        q.insert_jobs(kind=_db.KIND, jobs=[NewJob(_db.new_id(), _db.PAYLOAD, moment)], now=moment)

    def create_op() -> None:
        moment = _db.utc_text()
        engine.write(create_jobs(_db.KIND, [NewJob(_db.new_id(), _db.PAYLOAD, moment)], moment))

    return [
        ("engine.write(CreateJob), enqueue's own op", create_op),
        ("engine.write(CreateJob in a plain function)", lambda: engine.write(create_job)),
        ("engine.write(nothing)", lambda: engine.write(lambda q: None)),
        ("encode + id (Kind._create)", lambda: kind._create("enqueue", binding, [payload], {})),
        ("Kind.enqueue", lambda: kind.enqueue(payload)),
    ]


def _steps(db: _db.Database, synchronous: str) -> list[Step]:
    """Every line of the breakdown on db, the raw ones first."""
    library = _library_steps(db)
    raw: list[Step] = []
    if isinstance(db, _sqlite_db.SQLiteDatabase):
        raw = _sqlite_raw_steps(db, synchronous)
    elif isinstance(db, _postgres_db.PostgresDatabase):
        raw = _postgres_raw_steps(db)
    return raw + library


def main() -> None:
    engine = sys.argv[1] if len(sys.argv) > 1 else "sqlite"
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    synchronous = "FULL"
    if engine == "sqlite-normal":
        # Both sides without a sync per commit: what is left is the CPU's cost.
        db: _db.Database = _sqlite_db.SQLiteDatabase.create(durable=False)
        synchronous = "NORMAL"
    else:
        db = _databases.create(engine)
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
