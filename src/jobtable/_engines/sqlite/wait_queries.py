"""The SQLite engine's queries of durable waiting (queries/waits.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it. Its
single writer serializes a signal and a wait, so neither needs a lock.
"""

import sqlite3

from jobtable._engines.wait_queries import CommonWaitQueries
from jobtable.db.sqlite import waits


class SQLiteWaitQueries(CommonWaitQueries):
    """The generated waits Querier with the seam's two writes made of its statements."""

    _waits: waits.Querier

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._waits = waits.Querier(conn)

    def send_signal(self, *, name: str, key: str, payload: str, now: str) -> int:
        self._waits.insert_signal(name=name, key=key, payload=payload, now=now)
        return self._waits.wake_waiting_jobs(now=now, name=name, key=key)

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
        self._waits.save_job_wait(
            job_id=id,
            position=position,
            name=name,
            key=key,
            after_id=after_id,
            deadline=deadline,
            now=now,
        )
        return self._waits.suspend_job(
            now=now, run_at=run_at, name=name, key=key, after_id=after_id, id=id, attempt=attempt
        )

    def prune_signals(self, *, before: str) -> int:
        return self._waits.prune_signals(before=before)
