"""The hot path alone, to profile: ``python -m bench._hotpath [jobs] [workers] [engine]``.

Enqueues jobs no-op jobs (untimed) on a fresh SQLite file, or with engine
``postgres`` a fresh schema on the default server, then runs them with a
runner of workers workers until the table says all finished, and prints the
rate. Engine ``sqlite-normal`` is SQLite with synchronous=NORMAL: no fsync,
so the CPU's cost dominates. With workers 0 it enqueues the jobs one a call instead (timed) and
runs none: the single caller's enqueue. Run it under a sampling profiler, e.g.
``py-spy record -r 250 -f raw -o hot.txt -- python -m bench._hotpath``.
"""

import asyncio
import sys
import time

from bench import _databases, _db, _sqlite_db
from bench._end_to_end import wait_done
from bench._jobs import Ping, make_runner
from bench._plan import PAYLOADS


async def _run(db: _db.Database, jobs: int, workers: int) -> float:
    kinds = make_runner(db.store, workers=workers, name="bench-hotpath")
    for _ in range(jobs // _db.BATCH):
        kinds.noop.enqueue_many(PAYLOADS)
    started = kinds.expect(jobs)
    begin = time.perf_counter()
    await kinds.runner.start()
    await wait_done(db, started)
    elapsed = time.perf_counter() - begin
    kinds.runner.stop()
    await kinds.runner.wait()
    return jobs / elapsed


def _enqueue(db: _db.Database, jobs: int) -> float:
    kinds = make_runner(db.store, workers=1, name="bench-hotpath")
    enqueue, payload = kinds.noop.enqueue, Ping()
    begin = time.perf_counter()
    for _ in range(jobs):
        enqueue(payload)
    return jobs / (time.perf_counter() - begin)


def main() -> None:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 40_000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    engine = sys.argv[3] if len(sys.argv) > 3 else "sqlite"
    if engine == "sqlite-normal":
        db: _db.Database = _sqlite_db.SQLiteDatabase.create(durable=False)
    else:
        db = _databases.create(engine)
    try:
        rate = _enqueue(db, jobs) if workers == 0 else asyncio.run(_run(db, jobs, workers))
        print(f"{rate:,.0f} jobs/s")
    finally:
        db.close()


if __name__ == "__main__":
    main()
