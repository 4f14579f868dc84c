-- The step from schema version 7 to 8. SQLite cannot change a table's CHECK,
-- and version 8 adds the pending status, so the jobs table is rebuilt: the
-- old one is renamed (its indexes and triggers go with it), the schema's new
-- jobs table is created, every row is copied, the old table is dropped, and
-- the schema's indexes and triggers of jobs, workflows and job_deps are
-- created, all in the one transaction that records the new version. Every
-- job is kept, in no workflow.

-- name: RenameJobsV7 :exec
ALTER TABLE jobs RENAME TO jobs_v7;

-- name: CopyJobsV7 :exec
INSERT INTO jobs (
    seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, scheduled, run_at, created_at,
    started_at, finished_at, updated_at, unique_key, unique_statuses, traceparent,
    partition_key, sequence_key, sequence_blocks, tags, meta
)
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, scheduled, run_at, created_at,
    started_at, finished_at, updated_at, unique_key, unique_statuses, traceparent,
    partition_key, sequence_key, sequence_blocks, tags, meta
FROM jobs_v7;

-- name: DropJobsV7 :exec
DROP TABLE jobs_v7;
