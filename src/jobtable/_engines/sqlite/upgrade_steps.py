"""The steps that bring an older SQLite file's schema to the latest, one version at a time.

Each takes the latest schema's statements (``SQLiteSchema``) and runs inside
the one transaction that also records the new version (see ``file.py``).
"""

import dataclasses
import re
import sqlite3
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from jobtable._engines.sqlite.catalog import describe
from jobtable.db.sqlite_upgrade.models import JobsV7
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

# The columns the copy to version 8 reads: version 7's jobs table.
_V7_COLUMNS = frozenset(field.name for field in dataclasses.fields(JobsV7))


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


class SQLiteSchema(Protocol):
    """The latest schema's statements, as ``file.SQLiteSchema`` holds them."""

    @property
    def statements(self) -> list[str]: ...

    def creates(self, statement: str) -> frozenset[str]: ...

    def drops(self, statement: str) -> frozenset[str]: ...


# The indexes version 3 adds (unique keys and the listing's pages) or changes
# (jobs_finished's condition: schema.sql drops it, then creates it).
_INDEXES_V3 = frozenset(
    {
        "jobs_unique",
        "jobs_by_status",
        "jobs_by_status_kind",
        "jobs_by_status_queue",
        "jobs_finished",
    }
)


# The tables version 4 adds (flow control), and with its indexes all it creates.
_TABLES_V4 = frozenset({"queues", "queue_starts", "queue_starts_by_time"})
_CREATES_V4 = _TABLES_V4 | {"jobs_partition", "jobs_sequence"}
# What version 6 creates beside its columns: job_tags, its index, and the
# jobs table's triggers that fill it.
_CREATES_V6 = frozenset({"job_tags", "job_tags_seq", "jobs_tags_insert", "jobs_tags_delete"})
# What version 7 creates: job_steps and the jobs table's trigger that deletes
# a job's steps with it.
_CREATES_V7 = frozenset({"job_steps", "jobs_steps_delete"})
# What version 14 creates: signals, job_waits, their indexes and the jobs
# table's trigger that deletes a job's wait with it (not named jobs_, so no
# rebuild of the jobs table by an earlier step creates it first).
_CREATES_V14 = frozenset(
    {
        "signals",
        "signals_by_key",
        "signals_by_time",
        "job_waits",
        "job_waits_by_key",
        "job_waits_delete",
    }
)
# The last version the step to version 2 reaches: it rebuilds the jobs table
# as the latest schema has it, with its triggers, creates the tables later
# versions add beside it (flow control's, version 4; job_tags, version 6;
# job_steps, version 7) and runs the runners table's step (version 5) itself.
# The rebuilt jobs table has version 9's run_trace already.
_REBUILT_VERSION = 9
# What version 8 creates beside the rebuilt jobs table: workflows, job_deps
# and its index.
_TABLES_V8 = frozenset({"workflows", "job_deps", "job_deps_job"})
# The listing's indexes version 10 drops (keyed by status, versions 3 to 9)
# and those it creates in their place, and the list of workflows' index.
_INDEXES_V10 = frozenset(
    {
        "jobs_by_status",
        "jobs_by_status_kind",
        "jobs_by_status_queue",
        "jobs_by_kind",
        "jobs_by_queue",
        "jobs_by_rare_status",
        "jobs_by_rare_status_kind",
        "jobs_by_rare_status_queue",
        "workflows_by_time",
    }
)


def _upgrade_to_v2(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 2 adds the job options and the cancelled status: the jobs table
    # is rebuilt from the latest schema's statements for it, which makes it
    # the latest version's jobs table at once; later versions that change
    # only other tables still take their steps.
    [table] = [st for st in schema.statements if schema.creates(st) == {"jobs"}]
    # The jobs table's indexes are named for it.
    indexes = [
        st
        for st in schema.statements
        if (names := schema.creates(st)) and all(n.startswith("jobs_") for n in names)
    ]
    # The tables later versions add beside jobs (flow control's, version 4;
    # job_tags, version 6; job_steps, version 7), created before the jobs
    # table's triggers.
    tables = [
        st
        for st in schema.statements
        if (n := schema.creates(st))
        and n <= _TABLES_V4 | _TABLES_V8 | {"job_tags", "job_tags_seq", "job_steps"}
    ]
    upgrade_to_v2(conn, table, [*tables, *indexes])
    upgrade_to_v5(conn)
    return _REBUILT_VERSION


def _upgrade_to_v3(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 3 adds nullable columns, in place, and indexes; it changes one,
    # which schema.sql drops before creating it.
    indexes = [
        st
        for st in schema.statements
        if (n := schema.creates(st) or schema.drops(st)) and n <= _INDEXES_V3
    ]
    upgrade_to_v3(conn, indexes)
    return 3


def _upgrade_to_v4(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 4 adds columns in place, then flow control's indexes and tables.
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V4]
    upgrade_to_v4(conn, creates)
    return 4


def _upgrade_to_v5(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 5 adds the runners table's host and process, in place.
    upgrade_to_v5(conn)
    return 5


def _upgrade_to_v6(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 6 adds the jobs table's tags and meta in place, then job_tags.
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V6]
    upgrade_to_v6(conn, creates)
    return 6


def _upgrade_to_v7(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 7 adds job_steps and the trigger that deletes a job's steps.
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V7]
    upgrade_to_v7(conn, creates)
    return 7


def _upgrade_to_v8(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 8 adds the pending status, which SQLite's CHECK cannot take in
    # place: the jobs table is rebuilt from the latest schema's statement,
    # with its indexes and triggers (renamed away with the old table and
    # dropped with it), beside workflows and job_deps.
    if not set(describe(conn, "jobs").columns) >= _V7_COLUMNS:
        # Not a version 7 jobs table: the copy cannot keep its jobs. Left as it
        # is, the table check after the steps refuses the file, naming what
        # it lacks, and the whole upgrade rolls back.
        return 8
    [table] = [st for st in schema.statements if schema.creates(st) == {"jobs"}]
    creates = [
        st
        for st in schema.statements
        if (n := schema.creates(st))
        and (n <= _TABLES_V8 or all(name.startswith("jobs_") for name in n))
    ]
    upgrade_to_v8(conn, table, creates)
    # The rebuilt jobs table is the latest schema's: version 9's column too.
    return 9


def _upgrade_to_v9(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 9 adds the jobs table's run_trace, nullable, in place: no row is
    # rewritten.
    upgrade_to_v9(conn)
    return 9


def _upgrade_to_v10(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 10 replaces the listing's indexes keyed by status, which a claim
    # and a finish each moved, with indexes neither writes: schema.sql drops
    # the old ones, then creates the new ones, which a file rebuilt by the
    # step to version 8 has already.
    workflows = describe(conn, "workflows")
    # A file without workflows was not a version 7 one at the step to 8: it
    # gets no index of them, and the table check after the steps names what
    # it lacks.
    have = describe(conn, "jobs").indexes | (
        workflows.indexes if workflows.columns else frozenset({"workflows_by_time"})
    )
    statements = [
        st
        for st in schema.statements
        if (names := schema.drops(st) | (schema.creates(st) - have)) and names <= _INDEXES_V10
    ]
    upgrade_to_v10(conn, statements)
    return 10


def _upgrade_to_v11(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 11 sets the PostgreSQL jobs table's autovacuum parameters; a
    # SQLite file has none, and only records the version.
    return 11


def _upgrade_to_v12(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 12 adds the runners table's missing_keys, nullable, in place: no
    # row is rewritten.
    upgrade_to_v12(conn)
    return 12


def _upgrade_to_v13(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 13 adds the jobs table's partition_by and sequence_by,
    # nullable, in place, and the trigger that moves a job's tags with its
    # seq; a file whose jobs table a step to version 2 or 8 rebuilt from the
    # latest schema has all three already.
    if "partition_by" in describe(conn, "jobs").columns:
        return 13
    creates = [st for st in schema.statements if schema.creates(st) == {"jobs_tags_move"}]
    upgrade_to_v13(conn, creates)
    return 13


def _upgrade_to_v14(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 14 adds signals and job_waits (durable waiting) beside the
    # other tables; no row of them is touched. A file that has job_waits has
    # all of it, made in one transaction (by schema.sql or this step).
    if describe(conn, "job_waits").columns:
        return 14
    creates = [st for st in schema.statements if (n := schema.creates(st)) and n <= _CREATES_V14]
    upgrade_to_v14(conn, creates)
    return 14


def _upgrade_to_v15(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 15 adds the jobs table's published and debounce_key in place (no
    # row is rewritten), then jobs_debounce, unless the step to version 8
    # rebuilt the table from the latest schema with all three.
    jobs = describe(conn, "jobs")
    creates = [
        st for st in schema.statements if (n := schema.creates(st)) and n <= {"jobs_debounce"}
    ]
    upgrade_to_v15(conn, jobs.columns.keys(), [] if "jobs_debounce" in jobs.indexes else creates)
    return 15


def _upgrade_to_v16(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 16 adds the workflows table's deadline_at and deadline_done, in
    # place (no row is rewritten), and the index of deadlines not yet passed.
    # A file whose step to version 8 made workflows from the latest schema
    # has the columns already, but not the index; a file without workflows
    # gets nothing, and the table check after the steps names what it lacks.
    workflows = describe(conn, "workflows")
    if not workflows.columns:
        return 16
    creates = [
        st
        for st in schema.statements
        if schema.creates(st) == {"workflows_deadlines"}
        and "workflows_deadlines" not in workflows.indexes
    ]
    upgrade_to_v16(conn, creates, columns="deadline_at" not in workflows.columns)
    return 16


_CREATES_V17 = frozenset(
    {"workflows_slots", "jobs_workflow_slot_end", "jobs_workflow_slot_delete"}
    | {"jobs_workflow_slot_retry"}
)
"""The index and triggers version 17 adds: a workflow's concurrency limit."""


def _upgrade_to_v17(schema: SQLiteSchema, conn: sqlite3.Connection) -> int:
    # Version 17 adds the workflows table's concurrency and slot, in place
    # (no row is rewritten: every workflow is kept, with no limit), the index
    # of the workflows holding or waiting for a slot and the triggers that
    # free and admit them. A file whose step to version 8 made workflows from
    # the latest schema has the columns already; each index and trigger is
    # created unless it exists, so the step may run again.
    workflows = describe(conn, "workflows")
    if not workflows.columns:
        return 17
    creates = [
        _IF_NOT_EXISTS.sub(r"\1 IF NOT EXISTS", st)
        for st in schema.statements
        if (n := schema.creates(st)) and n <= _CREATES_V17
    ]
    upgrade_to_v17(conn, creates, columns="slot" not in workflows.columns)
    return 17


_IF_NOT_EXISTS = re.compile(
    r"^(\s*CREATE\s+(?:INDEX|TRIGGER))(?!\s+IF)", re.IGNORECASE | re.MULTILINE
)


def _upgrade_steps() -> dict[int, Callable[[SQLiteSchema, sqlite3.Connection], int]]:
    # Maps version N to the step that upgrades a database of version N and
    # returns the version it reached: N + 1, or a later one for a step that
    # rebuilds a table from the latest schema. The steps run in order inside
    # the one transaction that also records the new version. A new database
    # gets schema.sql whole instead, which is always the latest version.
    return {
        1: _upgrade_to_v2,
        2: _upgrade_to_v3,
        3: _upgrade_to_v4,
        4: _upgrade_to_v5,
        5: _upgrade_to_v6,
        6: _upgrade_to_v7,
        7: _upgrade_to_v8,
        8: _upgrade_to_v9,
        9: _upgrade_to_v10,
        10: _upgrade_to_v11,
        11: _upgrade_to_v12,
        12: _upgrade_to_v13,
        13: _upgrade_to_v14,
        14: _upgrade_to_v15,
        15: _upgrade_to_v16,
        16: _upgrade_to_v17,
    }


UPGRADES = _upgrade_steps()
"""Version N to the step that upgrades a file of version N; see ``_upgrade_steps``."""
