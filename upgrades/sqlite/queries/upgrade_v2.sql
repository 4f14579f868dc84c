-- The step from schema version 1 to 2. SQLite cannot change a table's CHECK,
-- so the jobs table is rebuilt: the old one is renamed, the schema's new jobs
-- table is created, every row is copied, the old table is dropped with its
-- indexes, and the schema's new indexes are created, all in the one
-- transaction that records the new version.

-- name: RenameJobsV1 :exec
ALTER TABLE jobs RENAME TO jobs_v1;

-- name: CopyJobsV1 :exec
-- CopyJobsV1 keeps every job: a job was runnable from its creation, started
-- when it was last claimed and finished when it last changed; a failed job's
-- error is its first history entry. A version 1 job has one attempt.
INSERT INTO jobs (
    seq, id, kind, status, payload, result, error, errors, runner, attempt,
    run_at, created_at, started_at, finished_at, updated_at
)
SELECT seq, id, kind, status, payload, result, error,
    CASE WHEN status = 'failed'
        THEN json_array(json_object('attempt', attempt, 'error', error, 'at', updated_at))
        ELSE '[]'
    END,
    runner, attempt, created_at, created_at,
    CASE WHEN attempt > 0 THEN updated_at END,
    CASE WHEN status IN ('succeeded', 'failed') THEN updated_at END,
    updated_at
FROM jobs_v1;

-- name: DropJobsV1 :exec
DROP TABLE jobs_v1;
