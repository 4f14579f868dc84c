"""The runner's claims and outcomes on PostgreSQL, on async connections on its event loop.

A claim that runs on a pooled connection crosses from the event loop to a
thread and back; on an async connection (psycopg's ``AsyncConnection``, the
generated ``AsyncQuerier``) the loop waits for the server's answer itself,
as it waits for any socket. Only the one statement of a claim and the
outcomes riding on it (``FinishAndClaimJobs``) runs here: the same SQL, so
the same fences, NOTIFYs and locks, in autocommit as on the pool.
"""

import contextlib
import select
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.postgres.connect import store_error
from jobtable._engines.postgres.operator_queries import pg_time
from jobtable._engines.postgres.pool import TextLoader, client_encoding
from jobtable._engines.rows import ClaimedRow, Outcome
from jobtable._errors import StoreError
from jobtable.db.postgres import jobs, schema_version

_AsyncConnection = psycopg.AsyncConnection[TupleRow]


def outcome_arrays(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """FinishAndClaimJobs's parameters for outcomes: one array a column, in their order."""
    return {
        "ids": [o.id for o in outcomes],
        "attempts": [o.attempt for o in outcomes],
        "states": [o.state for o in outcomes],
        "results": [o.result for o in outcomes],
        "errors": [o.error for o in outcomes],
        "run_ats": [None if o.run_at is None else pg_time(o.run_at) for o in outcomes],
    }


async def _alive(conn: _AsyncConnection) -> bool:
    """False for an idle connection the server has closed (see ``pool.dead``)."""
    if conn.closed or conn.broken:
        return False
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if not readable:
        return True
    try:
        await conn.execute("")
    except psycopg.Error:
        return False
    return True


class LoopConnections:
    """Async connections on the one event loop that uses them, opened as writes need them.

    A write takes an idle connection, or opens one (autocommit, its text
    read and its durability as the pool's connections), and gives it back
    when it ends. A connection whose write failed, or was cancelled, is
    closed rather than given back: its state is unknown. After ``aclose``
    the idle connections are closed, each busy one as it comes back, and a
    write raises StoreError. Not thread-safe: use it from its loop only.
    """

    def __init__(self, url: str, where: str, *, durable: bool) -> None:
        self._url = url
        self._where = where
        self._durable = durable
        self._idle: list[_AsyncConnection] = []
        self._closed = False

    async def _open(self) -> _AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        try:
            q = schema_version.AsyncQuerier(conn)
            await q.set_client_encoding(encoding=client_encoding(conn))
            conn.adapters.register_loader("text", TextLoader)
            if not self._durable:
                await q.disable_synchronous_commit()
        except BaseException:
            await conn.close()
            raise
        return conn

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[_AsyncConnection]:
        if self._closed:
            raise StoreError(f"postgres store {self._where}: the runner's connection is closed")
        conn = None
        while self._idle and conn is None:
            conn = self._idle.pop()
            if not await _alive(conn):
                await conn.close()
                conn = None
        try:
            if conn is None:
                conn = await self._open()
            yield conn
        except psycopg.Error as err:
            if conn is not None:
                await conn.close()
            raise store_error(self._where, "write", err) from err
        except BaseException:
            if conn is not None:
                await conn.close()
            raise
        if self._closed:
            await conn.close()
        else:
            self._idle.append(conn)

    async def finish_and_claim(
        self,
        *,
        outcomes: Sequence[Outcome],
        runner: str,
        queue: str,
        now: str,
        max_jobs: int,
        kinds: Sequence[str] | None,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        """Runs FinishAndClaimJobs (of kinds, when given); the jobs it finished and claimed.

        The outcomes must end no job of a workflow: settling its dependents
        takes more statements, in one transaction, which the pool runs.
        """
        arrays = outcome_arrays(outcomes)
        async with self._connection() as conn:
            q = jobs.AsyncQuerier(conn)
            rows: Sequence[jobs.FinishAndClaimJobsRow | jobs.FinishAndClaimJobsOfKindsRow]
            if kinds is None:
                rows = await q.finish_and_claim_jobs(
                    now=pg_time(now), queue=queue, max_jobs=max_jobs, runner=runner, **arrays
                )
            else:
                rows = await q.finish_and_claim_jobs_of_kinds(
                    now=pg_time(now),
                    queue=queue,
                    kinds=list(kinds),
                    max_jobs=max_jobs,
                    runner=runner,
                    **arrays,
                )
        return [row.id for row in rows if row.finished], [row for row in rows if not row.finished]

    async def aclose(self) -> None:
        """Closes the idle connections, and each busy one as its write ends; again does nothing."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
