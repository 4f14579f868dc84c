"""procrastinate as a peer on PostgreSQL: its psycopg connector and its own worker."""

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench import _db
from bench._peer_postgres import OnPostgres, PeerDatabase


class Procrastinate(OnPostgres):
    """procrastinate with its psycopg connector and its defaults.

    It keeps every job's row, as jobtable does, and also an event row per
    status change (procrastinate_events): more work per job.
    """

    label = "procrastinate"
    clear_sql = "TRUNCATE procrastinate_jobs CASCADE"

    def __init__(self, url: str) -> None:
        import procrastinate

        self.db = PeerDatabase(url, "procrastinate")
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=self.db.url))

        async def noop() -> None:
            return None

        self.task = self.app.task(name="noop")(noop)
        asyncio.run(self._in_app(self.app.schema_manager.apply_schema_async))

    async def _in_app(self, fn: Callable[[], Any]) -> Any:
        async with self.app.open_async():
            return await fn()

    def enqueue_one(self, count: int) -> float:
        async def run() -> float:
            defer = self.task.defer_async
            begin = time.perf_counter()
            for _ in range(count):
                await defer()
            return time.perf_counter() - begin

        return float(asyncio.run(self._in_app(run)))

    def enqueue_batch(self, count: int) -> float:
        async def run() -> float:
            payloads: list[dict[str, Any]] = [{} for _ in range(_db.BATCH)]
            begin = time.perf_counter()
            for _ in range(count // _db.BATCH):
                await self.task.batch_defer_async(*payloads)
            return time.perf_counter() - begin

        return float(asyncio.run(self._in_app(run)))

    def drain(self, count: int, workers: int) -> float:
        async def run() -> float:
            begin = time.perf_counter()
            await self.app.run_worker_async(concurrency=workers, wait=False)
            return time.perf_counter() - begin

        return float(asyncio.run(self._in_app(run)))
