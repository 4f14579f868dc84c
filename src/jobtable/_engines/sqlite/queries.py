"""The SQLite engine's queries: the generated Querier in the shape of the ``Queries`` seam.

Nothing but the engine imports it; it adds the seam's calls that take
several rows or outcomes at once, and computes the lease cutoffs from the
runner's own clock (a SQLite file is shared by the processes of one machine).
"""

import datetime
import json
import sqlite3
from collections.abc import Collection, Sequence

from jobtable._engines.dependencies import settle_dependents
from jobtable._engines.listing import list_page
from jobtable._engines.operator_queries import RunnerRow
from jobtable._engines.rows import ClaimedRow, NewJob, Outcome, RecordRow
from jobtable._engines.sqlite.flow_queries import SQLiteFlowQueries
from jobtable._engines.sqlite.operator_queries import SQLiteOperatorQueries
from jobtable._engines.sqlite.wait_queries import SQLiteWaitQueries
from jobtable._engines.sqlite.workflow_queries import SQLiteWorkflowQueries
from jobtable._values import timestamp
from jobtable.db.sqlite.dashboard import Querier as DashboardQuerier
from jobtable.db.sqlite.jobs import CreateJobsParams, GetJobsRow, Querier
from jobtable.db.sqlite.steps import Querier as StepsQuerier
from jobtable.db.sqlite_upgrade.upgrade_v2 import Querier as UpgradeV2
from jobtable.db.sqlite_upgrade.upgrade_v3 import Querier as UpgradeV3
from jobtable.db.sqlite_upgrade.upgrade_v4 import Querier as UpgradeV4
from jobtable.db.sqlite_upgrade.upgrade_v5 import Querier as UpgradeV5
from jobtable.db.sqlite_upgrade.upgrade_v6 import Querier as UpgradeV6
from jobtable.db.sqlite_upgrade.upgrade_v8 import Querier as UpgradeV8
from jobtable.db.sqlite_upgrade.upgrade_v9 import Querier as UpgradeV9
from jobtable.db.sqlite_upgrade.upgrade_v12 import Querier as UpgradeV12
from jobtable.db.sqlite_upgrade.upgrade_v13 import Querier as UpgradeV13
from jobtable.db.sqlite_upgrade.upgrade_v15 import Querier as UpgradeV15
from jobtable.db.sqlite_upgrade.upgrade_v16 import Querier as UpgradeV16
from jobtable.db.sqlite_upgrade.upgrade_v17 import Querier as UpgradeV17


def _before(now: str, seconds: float) -> str:
    moment = datetime.datetime.fromisoformat(now) - datetime.timedelta(seconds=seconds)
    return timestamp(moment)


class Queries(
    Querier,
    SQLiteOperatorQueries,
    SQLiteFlowQueries,
    SQLiteWorkflowQueries,
    DashboardQuerier,
    StepsQuerier,
    SQLiteWaitQueries,
):
    """The generated Querier with the seam's calls that take several rows at once.

    Its operator queries come from SQLiteOperatorQueries, its flow control's
    from SQLiteFlowQueries, the dashboard's and the steps' from the generated
    dashboard and steps Queriers; the bases share the connection.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        Querier.__init__(self, conn)
        SQLiteFlowQueries.__init__(self, conn)
        SQLiteWorkflowQueries.__init__(self, conn)

    def insert_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> None:
        if len(jobs) == 1:
            self.create_job(**jobs[0].fields(kind, now))
            return
        self.create_jobs(CreateJobsParams(**job.fields(kind, now)) for job in jobs)

    def insert_unique_jobs(self, *, kind: str, jobs: Sequence[NewJob], now: str) -> list[bool]:
        return [
            self.create_unique_job(
                **job.fields(kind, now),
                unique_key=job.unique_key,
                unique_statuses=job.unique_statuses,
            )
            == 1
            for job in jobs
        ]

    def insert_debounced_job(self, *, kind: str, job: NewJob, now: str) -> bool:
        fields = job.fields(kind, now)
        return self.create_debounced_job(**fields, debounce_key=job.debounce_key) == 1

    def debounce_job(  # type: ignore[override]
        self, *, kind: str, debounce_key: str, payload: str, replace: bool, run_at: str, now: str
    ) -> str | None:
        row = super().debounce_job(
            replace=replace,
            payload=payload,
            run_at=run_at,
            now=now,
            kind=kind,
            debounce_key=debounce_key,
        )
        return None if row is None else row.id

    def get_unique_holder(  # type: ignore[override]
        self, *, kind: str, unique_key: str
    ) -> str | None:
        row = super().get_unique_holder(kind=kind, unique_key=unique_key)
        return None if row is None else row.id

    def get_jobs(self, *, ids: Sequence[str]) -> list[GetJobsRow]:
        return super().get_jobs(ids=json.dumps(list(ids)))

    def lock_job(self, *, id: str) -> str | None:  # type: ignore[override]
        row = super().lock_job(id=id)
        return None if row is None else row.status

    def finish_and_claim_jobs(
        self,
        *,
        outcomes: Sequence[Outcome],
        runner: str | None,
        queue: str,
        now: str,
        max_jobs: int,
        kinds: Sequence[str] | None = None,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        # A statement per job costs no round trip here: they all share the
        # writer's transaction.
        finished: list[str] = []
        for o in outcomes:
            trace, job, attempt = o.run_trace, o.id, o.attempt
            if o.state == "succeeded":
                count = self.succeed_job(
                    result=o.result, now=now, run_trace=trace, id=job, attempt=attempt
                )
            elif o.state == "failed":
                count = self.fail_job(
                    error=o.error, now=now, run_trace=trace, id=job, attempt=attempt
                )
            elif o.state == "cancelled":
                count = self.cancel_running_job(now=now, run_trace=trace, id=job, attempt=attempt)
            elif o.error is None:
                count = self.snooze_job(run_at=o.run_at or now, now=now, id=o.id, attempt=o.attempt)
            else:
                count = self.retry_job(
                    error=o.error, now=now, run_at=o.run_at or now, id=o.id, attempt=o.attempt
                )
            if count:
                finished.append(o.id)
                if o.workflow:
                    settle_dependents(self, o.id, now)
        if max_jobs <= 0:
            return finished, []
        if kinds is not None:
            return finished, self.claim_next_job_of_kinds(
                runner=runner,
                now=now,
                queue=queue,
                kinds=json.dumps(list(kinds)),
                max_jobs=max_jobs,
            )
        return finished, self.claim_next_job(runner=runner, now=now, queue=queue, max_jobs=max_jobs)

    def notify_cancel(self) -> None:
        """Does nothing: SQLite has no NOTIFY, so runners poll for cancel requests."""

    def list_jobs(
        self,
        *,
        before: int,
        status: str | None,
        kind: str | None,
        queue: str | None,
        tag: str | None,
        max_jobs: int,
    ) -> Sequence[RecordRow]:
        return list_page(
            self,
            before=before,
            status=status,
            kind=kind,
            queue=queue,
            tag=tag,
            max_jobs=max_jobs,
        )

    def next_run_at(self, *, queue: str) -> str | None:  # type: ignore[override]
        row = super().next_run_at(queue=queue)
        return None if row is None else row.run_at

    def interrupt_jobs_of_dead_runners(  # type: ignore[override]
        self, *, error: str, now: str, lease: float, runner: str
    ) -> int:
        return super().interrupt_jobs_of_dead_runners(
            error=error, now=now, runner=runner, cutoff=_before(now, lease)
        )

    def get_runner(  # type: ignore[override]
        self, *, name: str, now: str, lease: float
    ) -> RunnerRow | None:
        return super().get_runner(cutoff=_before(now, lease), name=name)

    def delete_dead_runners(  # type: ignore[override]
        self, *, now: str, lease: float, name: str
    ) -> int:
        return super().delete_dead_runners(cutoff=_before(now, lease), name=name)

    def jobs_statistics_stale(self) -> bool:
        return False

    def analyze_jobs(self) -> None:
        return None


def upgrade_to_v2(
    conn: sqlite3.Connection, create_table: str, create_indexes: Sequence[str]
) -> None:
    """Rebuilds a version 1 jobs table as the latest version, keeping every job.

    create_table and create_indexes are the latest schema's statements that
    create the jobs table and its indexes, so the table it leaves is of the
    latest version, not of version 2.
    """
    q = UpgradeV2(conn)
    q.rename_jobs_v1()
    conn.execute(create_table)
    q.copy_jobs_v1()
    q.drop_jobs_v1()
    for statement in create_indexes:
        conn.execute(statement)


def upgrade_to_v3(conn: sqlite3.Connection, create_indexes: Sequence[str]) -> None:
    """Adds the columns of version 3 to a version 2 jobs table, then create_indexes.

    create_indexes are the latest schema's statements that create the indexes
    version 3 adds, and drop and create jobs_finished, which it changes.
    Every job is kept, not unique and with no trace context.
    """
    q = UpgradeV3(conn)
    q.add_unique_key_column_v3()
    q.add_unique_statuses_column_v3()
    q.add_traceparent_column_v3()
    for statement in create_indexes:
        conn.execute(statement)


def upgrade_to_v4(conn: sqlite3.Connection, creates: Sequence[str]) -> None:
    """Adds the columns of version 4 to a version 3 jobs table, then creates.

    creates are the latest schema's statements that create the indexes and
    tables version 4 adds (flow control). Every job is kept, in no partition
    and no sequence.
    """
    q = UpgradeV4(conn)
    q.add_partition_key_column_v4()
    q.add_sequence_key_column_v4()
    q.add_sequence_blocks_column_v4()
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v5(conn: sqlite3.Connection) -> None:
    """Adds the runners table's host and process columns of version 5, in place.

    Every runner's row is kept, with neither.
    """
    q = UpgradeV5(conn)
    q.add_runner_host_column_v5()
    q.add_runner_process_column_v5()


def upgrade_to_v6(conn: sqlite3.Connection, creates: Sequence[str]) -> None:
    """Adds the jobs table's tags and meta columns of version 6, in place, then creates.

    creates are the latest schema's statements that create job_tags, its
    index and the jobs table's triggers that fill it. Every job is kept,
    with no tag and no meta.
    """
    q = UpgradeV6(conn)
    q.add_job_tags_column_v6()
    q.add_job_meta_column_v6()
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v7(conn: sqlite3.Connection, creates: Sequence[str]) -> None:
    """Runs creates, the latest schema's statements that create version 7's job_steps.

    job_steps and the jobs table's trigger that deletes a job's steps with
    it; every job is kept, with no step.
    """
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v8(conn: sqlite3.Connection, create_table: str, creates: Sequence[str]) -> None:
    """Rebuilds a version 7 jobs table as version 8's, keeping every job, then runs creates.

    create_table is the latest schema's statement that creates the jobs
    table; creates are its statements that create the jobs table's indexes
    and triggers, workflows and job_deps. Every job is kept, in no workflow.
    """
    q = UpgradeV8(conn)
    q.rename_jobs_v7()
    conn.execute(create_table)
    q.copy_jobs_v7()
    q.drop_jobs_v7()
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v9(conn: sqlite3.Connection) -> None:
    """Adds the jobs table's run_trace column of version 9, in place.

    It is nullable, so adding it rewrites no row; every job is kept, with no
    run trace.
    """
    UpgradeV9(conn).add_run_trace_column_v9()


def upgrade_to_v10(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    """Runs statements, the latest schema's that replace the listing's indexes (version 10).

    They drop the indexes keyed by status that versions 3 to 9 had and create
    the listing's indexes of version 10; every job is kept.
    """
    for statement in statements:
        conn.execute(statement)


def upgrade_to_v12(conn: sqlite3.Connection) -> None:
    """Adds the runners table's missing_keys column of version 12, in place.

    It is nullable, so adding it rewrites no row; every runner is kept,
    having reported no missing key.
    """
    UpgradeV12(conn).add_runner_missing_keys_column_v12()


def upgrade_to_v13(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    """Adds the jobs table's partition_by and sequence_by (version 13), then runs statements.

    They are nullable, so adding them rewrites no row; statements are the
    latest schema's that create the trigger moving a job's tags with its
    seq. Every job is kept, keyed as it was.
    """
    q = UpgradeV13(conn)
    q.add_partition_by_column_v13()
    q.add_sequence_by_column_v13()
    for statement in statements:
        conn.execute(statement)


def upgrade_to_v14(conn: sqlite3.Connection, creates: Sequence[str]) -> None:
    """Runs creates, the latest schema's statements that create version 14's tables.

    signals, job_waits, their indexes and the trigger that deletes a job's
    wait with it; every job is kept, waiting for nothing.
    """
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v15(
    conn: sqlite3.Connection, columns: Collection[str], creates: Sequence[str]
) -> None:
    """Adds the jobs table's published and debounce_key columns of version 15, then creates.

    columns are the jobs table's columns now: a table the step to version 8
    rebuilt from the latest schema has both already. creates are the latest
    schema's statements that create the indexes it lacks (jobs_debounce).
    Every job is kept, having published nothing and holding no debounce key.
    """
    q = UpgradeV15(conn)
    if "published" not in columns:
        q.add_published_column_v15()
    if "debounce_key" not in columns:
        q.add_debounce_key_column_v15()
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v16(conn: sqlite3.Connection, creates: list[str], *, columns: bool) -> None:
    """Adds the workflows table's deadline columns of version 16 (with columns), then creates.

    They are nullable or have a constant default, so adding them rewrites
    no row; every workflow is kept, with no deadline. creates is the index
    of deadlines not yet passed, as schema.sql has it.
    """
    if columns:
        step = UpgradeV16(conn)
        step.add_workflow_deadline_column_v16()
        step.add_workflow_deadline_done_column_v16()
    for statement in creates:
        conn.execute(statement)


def upgrade_to_v17(conn: sqlite3.Connection, creates: list[str], *, columns: bool) -> None:
    """Adds the workflows table's concurrency and slot of version 17 (with columns), then creates.

    They are nullable, so adding them rewrites no row; every workflow is
    kept, with no limit. creates are the index of the workflows holding or
    waiting for a slot and the triggers that free and admit them, as
    schema.sql has them, each made unless it exists.
    """
    if columns:
        step = UpgradeV17(conn)
        step.add_workflow_concurrency_column_v17()
        step.add_workflow_slot_column_v17()
    for statement in creates:
        conn.execute(statement)
