"""The SQLite engine's flow control queries in the shape of the seam's ``FlowQueries``.

The writer thread runs one transaction at a time, so ``queue_flow`` needs no
lock, and a partitioned claim picks the jobs in one statement and claims
them one by one in the same transaction (see queries/flow.sql).
"""

import sqlite3
from collections.abc import Sequence

from jobtable._engines.flow import QueueFlow, QueueLimits, QueueRow, WaitFacts
from jobtable._engines.rows import ClaimedRow, seam_time
from jobtable.db.sqlite import flow


def _seconds(now: str) -> float:
    """now, UTC text, as seconds since 1970: queue_starts' times."""
    return seam_time(now).timestamp()


def _limits(
    concurrency: int | None,
    partition_limit: int | None,
    rate_limit: int | None,
    rate_period: float | None,
    rate_per_key: int,
) -> QueueLimits:
    return QueueLimits(concurrency, partition_limit, rate_limit, rate_period, bool(rate_per_key))


class SQLiteFlowQueries:
    """Flow control's queries on one connection of the writer."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._flow = flow.Querier(conn)

    def queue_flow(self, *, queue: str, lock: bool) -> QueueFlow | None:
        row = self._flow.get_queue_flow(queue=queue)
        if row is None:
            return None
        limits = _limits(
            row.concurrency, row.partition_limit, row.rate_limit, row.rate_period, row.rate_per_key
        )
        return QueueFlow(bool(row.paused), limits)

    def claim_within_limits(
        self, *, flow: QueueFlow, runner: str, queue: str, now: str, max_jobs: int
    ) -> Sequence[ClaimedRow]:
        if flow.paused or max_jobs <= 0:
            return []
        limits = flow.limits
        seconds = _seconds(now)
        since = seconds - (limits.rate_period or 0.0)
        rows: list[ClaimedRow] = []
        if flow.partitioned:
            picked = self._flow.pick_partitioned_jobs(
                max_jobs=max_jobs,
                concurrency=limits.concurrency,
                queue=queue,
                rate_per_key=int(limits.rate_per_key),
                rate_limit=limits.rate_limit,
                since=since,
                partition_limit=limits.partition_limit,
                key_cap=flow.key_cap(max_jobs),
            )
            for pick in picked:
                claimed = self._flow.claim_job(runner=runner, now=now, seq=pick.seq)
                if claimed is not None:
                    rows.append(claimed)
        else:
            rows.extend(
                self._flow.claim_limited_jobs(
                    runner=runner,
                    now=now,
                    queue=queue,
                    max_jobs=max_jobs,
                    concurrency=limits.concurrency,
                    rate_limit=limits.rate_limit,
                    since=since,
                )
            )
        if limits.rate_limit is not None:
            for row in rows:
                self._flow.record_start(
                    queue=queue, partition_key=row.partition_key, started_at=seconds
                )
            self._flow.forget_starts(queue=queue, before=since)
        return rows

    def next_rate_opening(self, *, queue: str, period: float, now: str) -> float | None:
        seconds = _seconds(now)
        row = self._flow.next_rate_opening(queue=queue, since=seconds - period)
        return None if row is None else row.started_at + period - seconds

    def declare_queue(self, *, name: str, limits: QueueLimits, now: str) -> None:
        self._flow.declare_queue(
            name=name,
            concurrency=limits.concurrency,
            partition_limit=limits.partition_limit,
            rate_limit=limits.rate_limit,
            rate_period=limits.rate_period,
            rate_per_key=int(limits.rate_per_key),
            now=now,
        )

    def set_queue_limits(self, *, name: str, limits: QueueLimits, now: str) -> None:
        self._flow.set_queue_limits(
            name=name,
            concurrency=limits.concurrency,
            partition_limit=limits.partition_limit,
            rate_limit=limits.rate_limit,
            rate_period=limits.rate_period,
            rate_per_key=int(limits.rate_per_key),
            now=now,
        )

    def clear_queue_limits(self, *, name: str, now: str) -> int:
        return self._flow.clear_queue_limits(name=name, now=now)

    def set_queue_paused(self, *, name: str, paused: bool, now: str) -> None:
        # A commit to the file wakes every runner watching it: no notice to send.
        self._flow.set_queue_paused(name=name, paused=int(paused), now=now)

    def drop_empty_queue(self, *, name: str) -> None:
        self._flow.drop_empty_queue(name=name)

    def list_queues(self) -> list[QueueRow]:
        return [
            QueueRow(
                row.name,
                bool(row.paused),
                _limits(
                    row.concurrency,
                    row.partition_limit,
                    row.rate_limit,
                    row.rate_period,
                    row.rate_per_key,
                ),
                bool(row.overridden),
                row.queued,
                row.running,
            )
            for row in self._flow.list_queues()
        ]

    def get_wait_facts(self, *, id: str, now: str) -> WaitFacts | None:
        row = self._flow.get_wait_facts(now_seconds=_seconds(now), id=id)
        if row is None:
            return None
        limits = _limits(
            row.concurrency, row.partition_limit, row.rate_limit, None, row.rate_per_key
        )
        return WaitFacts(
            bool(row.paused),
            limits,
            row.running,
            row.running_in_key,
            row.starts,
            row.starts_in_key,
            bool(row.behind_sequence),
        )
