-- The operators' queries: what the CLI and the dashboard read and change,
-- through the Store's public operations.

-- name: RequeueJob :execrows
-- RequeueJob puts a failed or cancelled job back in its queue, ready at once,
-- allowed max_attempts more claims: attempt keeps counting claims, since it
-- fences every write a worker makes. Its error history is kept; its error,
-- result and cancel request are cleared.
UPDATE jobs
SET status = 'queued', error = NULL, result = NULL, cancel_requested = 0,
    max_attempts = attempt + max_attempts, run_at = @now, scheduled = 0, runner = NULL,
    finished_at = NULL, updated_at = @now
WHERE id = @id AND status IN ('failed', 'cancelled');

-- name: RequeueFailedJobs :execrows
-- RequeueFailedJobs does what RequeueJob does to every failed job that matches
-- each filter given (a null filter matches all).
UPDATE jobs
SET status = 'queued', error = NULL, result = NULL, cancel_requested = 0,
    max_attempts = attempt + max_attempts, run_at = @now, scheduled = 0, runner = NULL,
    finished_at = NULL, updated_at = @now
WHERE status = 'failed'
    AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR kind = sqlc.narg(kind))
    AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue));

-- name: DeleteJob :execrows
-- DeleteJob deletes a job that is not running.
DELETE FROM jobs WHERE id = @id AND status <> 'running';

-- name: ListRunners :many
-- ListRunners reads every registered runner, and whether its heartbeat is
-- not older than cutoff.
SELECT name, started_at, heartbeat_at, heartbeat_at >= @cutoff AS alive
FROM runners ORDER BY name;

-- name: ListHeldJobs :many
-- ListHeldJobs lists the running jobs and the runner holding each, through
-- the index of running rows.
SELECT runner, id FROM jobs WHERE status = 'running' ORDER BY runner, seq;

-- name: JobStats :many
-- JobStats counts the jobs of each queue by status and, in the same pass,
-- finds the earliest run_at among the queued jobs that may run by now (now
-- itself when none may).
SELECT queue, status, count(*) AS jobs,
    CAST(COALESCE(min(CASE WHEN status = 'queued' AND run_at <= @now THEN run_at END), @now) AS TEXT)
        AS oldest_run_at
FROM jobs GROUP BY queue, status ORDER BY queue, status;

-- name: FinishedPerMinute :many
-- FinishedPerMinute counts the jobs that finished since since, per minute and
-- status. A finished row never changes again, so its updated_at is its
-- finished_at: filtering on it lets the index of finished rows read only the
-- window. Without ANALYZE's statistics SQLite would rather take an index on
-- status, which reads every finished row, so the query names its index.
SELECT CAST(substr(updated_at, 1, 16) || ':00.000000Z' AS TEXT) AS minute, status, count(*) AS jobs
FROM jobs INDEXED BY jobs_finished
WHERE (status = 'succeeded' OR status = 'failed' OR status = 'cancelled') AND updated_at >= @since
GROUP BY minute, status ORDER BY minute, status;
