"""The PostgreSQL engine's flow control queries in the shape of the seam's ``FlowQueries``.

Claims run concurrently here: ``queue_flow(lock=True)`` locks the queue's
row, so the limited claims of one queue take turns (postgres/queries/flow.sql
says why). Rate windows are measured by the server's clock.
"""

import psycopg
from psycopg.rows import TupleRow

from jobtable._engines.flow import QueueFlow, QueueLimits, QueueRow, WaitFacts
from jobtable._engines.rows import ClaimedRow, seam_time
from jobtable.db.postgres import flow


class PostgresFlowQueries:
    """Flow control's queries on one connection."""

    def __init__(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._flow = flow.Querier(conn)

    def queue_flow(self, *, queue: str, lock: bool) -> QueueFlow | None:
        row = (
            self._flow.lock_queue_flow(queue=queue)
            if lock
            else self._flow.get_queue_flow(queue=queue)
        )
        if row is None:
            return None
        limits = QueueLimits(
            row.concurrency, row.partition_limit, row.rate_limit, row.rate_period, row.rate_per_key
        )
        return QueueFlow(row.paused, limits)

    def claim_within_limits(
        self, *, flow: QueueFlow, runner: str, queue: str, now: str, max_jobs: int
    ) -> list[ClaimedRow]:
        if flow.paused or max_jobs <= 0:
            return []
        limits = flow.limits
        if flow.partitioned:
            self._flow.skip_jit()
            return list(
                self._flow.claim_partitioned_jobs(
                    queue=queue,
                    rate_period=limits.rate_period,
                    key_cap=flow.key_cap(max_jobs),
                    partition_limit=limits.partition_limit,
                    rate_per_key=limits.rate_per_key,
                    rate_limit=limits.rate_limit,
                    max_jobs=max_jobs,
                    concurrency=limits.concurrency,
                    runner=runner,
                    now=seam_time(now),
                )
            )
        return list(
            self._flow.claim_limited_jobs(
                queue=queue,
                max_jobs=max_jobs,
                concurrency=limits.concurrency,
                rate_limit=limits.rate_limit,
                rate_period=limits.rate_period,
                runner=runner,
                now=seam_time(now),
            )
        )

    def next_rate_opening(self, *, queue: str, period: float, now: str) -> float | None:
        row = self._flow.next_rate_opening(queue=queue, rate_period=period)
        return None if row is None else row.seconds

    def declare_queue(self, *, name: str, limits: QueueLimits, now: str) -> None:
        self._flow.declare_queue(
            name=name,
            concurrency=limits.concurrency,
            partition_limit=limits.partition_limit,
            rate_limit=limits.rate_limit,
            rate_period=limits.rate_period,
            rate_per_key=limits.rate_per_key,
            now=seam_time(now),
        )

    def set_queue_limits(self, *, name: str, limits: QueueLimits, now: str) -> None:
        self._flow.set_queue_limits(
            name=name,
            concurrency=limits.concurrency,
            partition_limit=limits.partition_limit,
            rate_limit=limits.rate_limit,
            rate_period=limits.rate_period,
            rate_per_key=limits.rate_per_key,
            now=seam_time(now),
        )

    def clear_queue_limits(self, *, name: str, now: str) -> int:
        return self._flow.clear_queue_limits(name=name, now=seam_time(now))

    def set_queue_paused(self, *, name: str, paused: bool, now: str) -> None:
        self._flow.set_queue_paused(name=name, paused=paused, now=seam_time(now))

    def drop_empty_queue(self, *, name: str) -> None:
        self._flow.drop_empty_queue(name=name)

    def list_queues(self) -> list[QueueRow]:
        return [
            QueueRow(
                row.name,
                row.paused,
                QueueLimits(
                    row.concurrency,
                    row.partition_limit,
                    row.rate_limit,
                    row.rate_period,
                    row.rate_per_key,
                ),
                row.overridden,
                row.queued,
                row.running,
            )
            for row in self._flow.list_queues()
        ]

    def get_wait_facts(self, *, id: str, now: str) -> WaitFacts | None:
        row = self._flow.get_wait_facts(id=id)
        if row is None:
            return None
        limits = QueueLimits(
            row.concurrency, row.partition_limit, row.rate_limit, None, row.rate_per_key
        )
        return WaitFacts(
            row.paused,
            limits,
            row.running,
            row.running_in_key,
            row.starts,
            row.starts_in_key,
            row.behind_sequence,
        )
