"""The PostgreSQL engine's queries of durable waiting (postgres/queries/waits.sql) on the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it. Times
go in and come out as the seam's UTC text. A signal and a wait of one name
and key take LockSignalKey first: concurrent transactions would otherwise
each miss the other's uncommitted write.
"""

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.rows import seam_time
from jobtable._engines.wait_queries import CommonWaitQueries
from jobtable.db.postgres import waits


class PostgresWaitQueries(CommonWaitQueries):
    """The generated waits Querier with the seam's UTC text for times."""

    _waits: waits.Querier

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._waits = waits.Querier(conn)

    def send_signal(self, *, name: str, key: str, payload: str, now: str) -> int:
        self._waits.lock_signal_key(name=name, key=key)
        self._waits.insert_signal(name=name, key=key, payload=payload, now=seam_time(now))
        row = self._waits.wake_waiting_jobs(now=seam_time(now), name=name, key=key)
        return 0 if row is None else row.woken

    def suspend_waiting_job(
        self,
        *,
        id: str,
        attempt: int,
        position: int,
        name: str,
        key: str,
        after_id: int,
        deadline: str | None,
        run_at: str,
        now: str,
    ) -> int:
        self._waits.lock_signal_key(name=name, key=key)
        self._waits.save_job_wait(
            job_id=id,
            position=position,
            name=name,
            key=key,
            after_id=after_id,
            deadline=None if deadline is None else seam_time(deadline),
            now=seam_time(now),
        )
        row = self._waits.suspend_job(
            now=seam_time(now),
            run_at=seam_time(run_at),
            id=id,
            attempt=attempt,
            name=name,
            key=key,
            after_id=after_id,
        )
        return 0 if row is None else row.suspended

    def prune_signals(self, *, before: str) -> int:
        return self._waits.prune_signals(before=seam_time(before))
