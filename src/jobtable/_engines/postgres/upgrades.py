"""The steps that bring an older PostgreSQL schema to the latest, one version at a time.

Each runs inside the one transaction that also records the new version (see
``schema.apply_schema``), so an upgrade is all or nothing.
"""

import psycopg
from psycopg.rows import TupleRow

from jobtable.db.postgres import (
    upgrade_v2,
    upgrade_v3,
    upgrade_v4,
    upgrade_v5,
    upgrade_v6,
    upgrade_v7,
    upgrade_v8,
    upgrade_v9,
    upgrade_v10,
    upgrade_v11,
    upgrade_v12,
    upgrade_v13,
    upgrade_v14,
    upgrade_v15,
    upgrade_v16,
    upgrade_v17,
)

_Connection = psycopg.Connection[TupleRow]


def upgrade_to_v2(conn: _Connection) -> None:
    """Brings a version 1 schema's jobs table to version 2, keeping every job."""
    q = upgrade_v2.Querier(conn)
    q.add_job_option_columns_v2()
    q.fill_job_option_columns_v2()
    q.require_run_at_v2()
    q.allow_cancelled_status_v2()
    q.drop_job_indexes_v1()
    q.create_jobs_queued_index_v2()
    q.create_jobs_scheduled_index_v2()
    q.create_jobs_finished_index_v2()


def upgrade_to_v3(conn: _Connection) -> None:
    """Brings a version 2 schema's jobs table to version 3, keeping every job.

    The new columns are nullable, so adding them rewrites no row.
    """
    q = upgrade_v3.Querier(conn)
    q.add_unique_and_trace_columns_v3()
    q.create_jobs_unique_index_v3()
    q.create_jobs_by_status_index_v3()
    q.create_jobs_by_status_kind_index_v3()
    q.create_jobs_by_status_queue_index_v3()


def upgrade_to_v4(conn: _Connection) -> None:
    """Brings a version 3 schema to version 4 (flow control), keeping every job.

    The new columns are nullable or have a constant default, so adding them
    rewrites no row.
    """
    q = upgrade_v4.Querier(conn)
    q.add_flow_columns_v4()
    q.create_jobs_partition_index_v4()
    q.create_jobs_sequence_index_v4()
    q.create_queues_table_v4()
    q.create_queue_starts_table_v4()
    q.create_queue_starts_index_v4()


def upgrade_to_v5(conn: _Connection) -> None:
    """Brings a version 4 schema's runners table to version 5: its host and process columns.

    They are nullable, so adding them rewrites no row; every runner's row is kept.
    """
    upgrade_v5.Querier(conn).add_runner_process_columns_v5()


def upgrade_to_v6(conn: _Connection) -> None:
    """Brings a version 5 schema to version 6: the jobs table's tags and meta, and job_tags.

    tags has a constant default and meta is nullable, so adding them
    rewrites no row; every job is kept, with no tag and no meta.
    """
    q = upgrade_v6.Querier(conn)
    q.add_job_tags_columns_v6()
    q.create_job_tags_table_v6()
    q.create_job_tags_seq_index_v6()
    q.create_index_tags_function_v6()
    q.create_unindex_tags_function_v6()
    q.create_index_tags_trigger_v6()
    q.create_unindex_tags_trigger_v6()


def upgrade_to_v7(conn: _Connection) -> None:
    """Brings a version 6 schema to version 7: job_steps, deleted with its jobs.

    Every job is kept, with no step.
    """
    q = upgrade_v7.Querier(conn)
    q.create_job_steps_table_v7()
    q.create_delete_steps_function_v7()
    q.create_delete_steps_trigger_v7()


def upgrade_to_v8(conn: _Connection) -> None:
    """Brings a version 7 schema to version 8: the pending status, workflows and job_deps.

    The jobs table's new columns are nullable or have a constant default, so
    adding them rewrites no row; every job is kept, in no workflow.
    """
    q = upgrade_v8.Querier(conn)
    q.allow_pending_status_v8()
    q.add_workflow_columns_v8()
    q.create_jobs_workflow_index_v8()
    q.create_workflows_table_v8()
    q.create_job_deps_table_v8()
    q.create_job_deps_job_index_v8()
    q.create_delete_deps_function_v8()
    q.create_delete_deps_trigger_v8()


def upgrade_to_v9(conn: _Connection) -> None:
    """Brings a version 8 schema to version 9: the jobs table's run_trace column.

    It is nullable, so adding it rewrites no row; every job is kept, with no
    run trace.
    """
    upgrade_v9.Querier(conn).add_run_trace_column_v9()


def upgrade_to_v10(conn: _Connection) -> None:
    """Brings a schema to version 10: the listing's jobs_by_status gives way to jobs_by_rare_status.

    A finish wrote an entry in jobs_by_status; a claim and a finish write
    none in jobs_by_rare_status. The planner gets jobs_listing, the
    statistics of status, kind and queue together, and the list of
    workflows its index by time. Every job is kept.
    """
    q = upgrade_v10.Querier(conn)
    q.drop_jobs_by_status_index_v10()
    q.create_jobs_by_rare_status_index_v10()
    q.create_jobs_listing_statistics_v10()
    q.create_workflows_by_time_index_v10()


def upgrade_to_v11(conn: _Connection) -> None:
    """Brings a version 10 schema to version 11: the jobs table's autovacuum parameters.

    Setting them rewrites no row; every job is kept.
    """
    upgrade_v11.Querier(conn).set_jobs_autovacuum_v11()


def upgrade_to_v12(conn: _Connection) -> None:
    """Brings a version 11 schema to version 12: the runners table's missing_keys column.

    It is nullable, so adding it rewrites no row; every runner is kept,
    having reported no missing key.
    """
    upgrade_v12.Querier(conn).add_runner_missing_keys_column_v12()


def upgrade_to_v13(conn: _Connection) -> None:
    """Brings a version 12 schema to version 13: the keys a fed job takes from its payload.

    The jobs table's partition_by and sequence_by are nullable, so adding
    them rewrites no row; seq becomes generated by default, a catalog change,
    so that a fed job joining a sequence takes a new one, its tags moved with
    it by a trigger; jobtable_payload_key computes the keys. Every job is
    kept, keyed as it was.
    """
    q = upgrade_v13.Querier(conn)
    q.add_fed_key_columns_v13()
    q.seq_by_default_v13()
    q.create_move_tags_function_v13()
    q.create_move_tags_trigger_v13()
    q.create_payload_key_function_v13()


def upgrade_to_v14(conn: _Connection) -> None:
    """Brings a version 13 schema to version 14: signals and job_waits (durable waiting).

    Two new tables, their indexes, and the jobs table's delete trigger that
    deletes a job's wait with it; every job is kept, waiting for nothing.
    """
    q = upgrade_v14.Querier(conn)
    q.create_signals_table_v14()
    q.create_signals_by_key_index_v14()
    q.create_signals_by_time_index_v14()
    q.create_job_waits_table_v14()
    q.create_job_waits_by_key_index_v14()
    q.create_delete_waits_function_v14()
    q.create_delete_waits_trigger_v14()


def upgrade_to_v15(conn: _Connection) -> None:
    """Brings a version 14 schema to version 15: the jobs table's published and debounce_key.

    A column with a constant default, or none, is added without rewriting a
    row: every job is kept, having published nothing and holding no debounce
    key, so jobs_debounce starts empty.
    """
    q = upgrade_v15.Querier(conn)
    q.add_published_column_v15()
    q.add_debounce_key_column_v15()
    q.create_debounce_index_v15()


def upgrade_to_v16(conn: _Connection) -> None:
    """Brings a version 15 schema to version 16: the workflows table's deadline columns.

    They are nullable or have a constant default, so adding them rewrites
    no row; every workflow is kept, with no deadline.
    """
    step = upgrade_v16.Querier(conn)
    step.add_workflow_deadline_columns_v16()
    step.create_workflow_deadlines_index_v16()


def upgrade_to_v17(conn: _Connection) -> None:
    """Brings a version 16 schema to version 17: a workflow's concurrency limit.

    The workflows table's concurrency and slot are nullable, so adding them
    rewrites no row; every workflow is kept, with no limit. Then the index
    of the workflows holding or waiting for a slot, and the functions and
    triggers that free and admit them. Each statement may run again.
    """
    step = upgrade_v17.Querier(conn)
    step.add_workflow_slot_columns_v17()
    step.create_workflow_slots_index_v17()
    step.create_workflow_slot_function_v17()
    step.create_workflow_slot_end_trigger_v17()
    step.create_workflow_slot_delete_trigger_v17()
    step.create_workflow_slot_retry_function_v17()
    step.create_workflow_slot_retry_trigger_v17()
