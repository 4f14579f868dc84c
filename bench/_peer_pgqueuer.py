"""pgqueuer as a peer on PostgreSQL, with the asyncpg or the psycopg driver, and its drain mode."""

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench import _db
from bench._peer_postgres import OnPostgres, PeerDatabase


class PgQueuer(OnPostgres):
    """pgqueuer with the asyncpg or the psycopg driver and its defaults.

    It deletes a job's row when the job finishes (keeping a log row per
    status change in pgqueuer_log): less work per job than jobtable, whose
    finished rows stay.
    """

    clear_sql = "TRUNCATE pgqueuer, pgqueuer_log"

    def __init__(self, url: str, driver: str) -> None:
        self.label = f"pgqueuer ({driver})"
        self.driver = driver
        self.db = PeerDatabase(url, f"pgqueuer_{driver}")
        asyncio.run(self._with_queries(lambda q: q.install()))

    async def _connect(self) -> tuple[Any, Callable[[], Any]]:
        """A pgqueuer driver on a new connection, and the coroutine function that closes it."""
        from pgqueuer import AsyncpgDriver, PsycopgDriver

        if self.driver == "asyncpg":
            import asyncpg

            conn = await asyncpg.connect(self.db.url)
            return AsyncpgDriver(conn), conn.close
        import psycopg

        aconn = await psycopg.AsyncConnection.connect(self.db.url, autocommit=True)
        return PsycopgDriver(aconn), aconn.close

    async def _with_queries(self, fn: Callable[[Any], Any]) -> Any:
        from pgqueuer import Queries

        driver, close = await self._connect()
        try:
            return await fn(Queries(driver))
        finally:
            await close()

    def enqueue_one(self, count: int) -> float:
        async def run(queries: Any) -> float:
            begin = time.perf_counter()
            for _ in range(count):
                await queries.enqueue("noop", None)
            return time.perf_counter() - begin

        return float(asyncio.run(self._with_queries(run)))

    def enqueue_batch(self, count: int) -> float:
        names, payloads, priorities = ["noop"] * _db.BATCH, [None] * _db.BATCH, [0] * _db.BATCH

        async def run(queries: Any) -> float:
            begin = time.perf_counter()
            for _ in range(count // _db.BATCH):
                await queries.enqueue(names, payloads, priorities)
            return time.perf_counter() - begin

        return float(asyncio.run(self._with_queries(run)))

    def drain(self, count: int, workers: int) -> float:
        from pgqueuer import QueueManager
        from pgqueuer.types import QueueExecutionMode

        async def run(queries: Any) -> float:
            manager = QueueManager(queries)

            async def noop(job: object) -> None:
                return None

            manager.entrypoint("noop")(noop)

            begin = time.perf_counter()
            await manager.run(mode=QueueExecutionMode.drain, batch_size=workers)
            return time.perf_counter() - begin

        return float(asyncio.run(self._with_queries(run)))
