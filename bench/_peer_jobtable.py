"""jobtable as a queue of the peers comparison, on the database ``make bench`` uses.

``bench._ab`` and ``bench._switches`` drive it too, for the same workload.
"""

import asyncio
import time

from bench import _databases, _db
from bench._end_to_end import drain_seconds
from bench._jobs import Ping, make_runner
from bench._peer_queue import Queue
from bench._plan import PAYLOADS
from bench._sqlite_db import SQLiteDatabase


class Jobtable(Queue):
    """jobtable on a fresh SQLite file or PostgreSQL schema, as ``make bench`` uses."""

    def __init__(self, engine: str, pg_url: str, *, durable: bool = True) -> None:
        self.engine = engine
        self.label = "jobtable"
        self.db: _db.Database = (
            _databases.create(engine, pg_url) if durable else SQLiteDatabase.create(durable=False)
        )
        self.kinds = make_runner(self.db.store, workers=1, name="bench-peers-enqueuer")

    def enqueue_one(self, count: int) -> float:
        enqueue, payload = self.kinds.noop.enqueue, Ping()
        begin = time.perf_counter()
        for _ in range(count):
            enqueue(payload)
        return time.perf_counter() - begin

    def enqueue_batch(self, count: int) -> float:
        begin = time.perf_counter()
        for _ in range(count // _db.BATCH):
            self.kinds.noop.enqueue_many(PAYLOADS)
        return time.perf_counter() - begin

    async def _drain(self, count: int, workers: int) -> float:
        kinds = make_runner(self.db.store, workers=workers, name=f"bench-peers-w{workers}")
        return await drain_seconds(kinds.runner, self.db, kinds.expect(count))

    def drain(self, count: int, workers: int) -> float:
        return asyncio.run(self._drain(count, workers))

    def enqueue_threads(self, count: int, threads: int) -> float:
        enqueue, payload = self.kinds.noop.enqueue, Ping()

        def work(share: int) -> None:
            for _ in range(share):
                enqueue(payload)

        return _db.run_threads(threads, lambda _, share: work(share), count)

    def clear(self) -> None:
        self.db.reset()

    def close(self) -> None:
        self.db.close()
