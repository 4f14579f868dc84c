"""The SQLite engine's queries of durable waiting (queries/waits.sql) in the shape of the seam.

A base of the engine's ``Queries`` adapter; nothing else imports it. Its
single writer serializes a signal and a wait, so neither needs a lock.
"""

from jobtable.db.sqlite.waits import Querier as WaitsQuerier


class SQLiteWaitQueries(WaitsQuerier):
    """The generated waits Querier with the seam's two writes made of its statements."""

    def send_signal(self, *, name: str, key: str, payload: str, now: str) -> int:
        self.insert_signal(name=name, key=key, payload=payload, now=now)
        return self.wake_waiting_jobs(now=now, name=name, key=key)

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
        self.save_job_wait(
            job_id=id,
            position=position,
            name=name,
            key=key,
            after_id=after_id,
            deadline=deadline,
            now=now,
        )
        return self.suspend_job(
            now=now, run_at=run_at, name=name, key=key, after_id=after_id, id=id, attempt=attempt
        )
