-- The operators' queries: what the CLI and the dashboard read and change,
-- through the Store's public operations.

-- name: RequeueJob :execrows
-- RequeueJob puts a failed or cancelled job back in its queue, ready at once,
-- allowed max_attempts more claims: attempt keeps counting claims, since it
-- fences every write a worker makes. Its error history is kept; its error,
-- result and cancel request are cleared. A unique job whose key another job
-- holds now (see jobs_unique) is left as it is. A job of a workflow whose
-- dependencies have not all ended goes back to pending. A debounced job
-- gives up its key (see jobs_debounce): a later job may hold it now.
UPDATE jobs
SET status = CASE WHEN pending_deps > 0 THEN 'pending' ELSE 'queued' END,
    error = NULL, result = NULL, cancel_requested = false, blocked_by = NULL,
    max_attempts = attempt + max_attempts, run_at = @now, scheduled = false, runner = NULL,
    finished_at = NULL, updated_at = @now, debounce_key = NULL
WHERE jobs.id = @id AND jobs.status IN ('failed', 'cancelled')
    AND (jobs.unique_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM jobs AS holder
        WHERE holder.kind = jobs.kind AND holder.unique_key = jobs.unique_key
            AND holder.seq <> jobs.seq
            AND (holder.unique_statuses & CASE holder.status
                WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
                WHEN 'failed' THEN 8 ELSE 16 END) <> 0
    ));

-- name: RequeueFailedJobs :execrows
-- RequeueFailedJobs does what RequeueJob does to every failed job of no
-- workflow that matches each filter given (a null filter matches all). The
-- failed jobs of workflows (ListFailedWorkflowJobs) are retried one by one,
-- as a single retry does, since each settles the jobs around it.
UPDATE jobs
SET status = 'queued', error = NULL, result = NULL, cancel_requested = false,
    max_attempts = attempt + max_attempts, run_at = @now, scheduled = false, runner = NULL,
    finished_at = NULL, updated_at = @now
WHERE jobs.status = 'failed' AND jobs.workflow_id IS NULL
    AND (sqlc.narg(kind)::text IS NULL OR jobs.kind = sqlc.narg(kind))
    AND (sqlc.narg(queue)::text IS NULL OR jobs.queue = sqlc.narg(queue))
    AND (jobs.unique_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM jobs AS holder
        WHERE holder.kind = jobs.kind AND holder.unique_key = jobs.unique_key
            AND holder.seq <> jobs.seq
            AND (holder.unique_statuses & CASE holder.status
                WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
                WHEN 'failed' THEN 8 ELSE 16 END) <> 0
    ))
    -- Of failed jobs sharing a unique key, only the newest: queued, they would
    -- collide with each other.
    AND (jobs.unique_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM jobs AS twin
        WHERE twin.kind = jobs.kind AND twin.unique_key = jobs.unique_key
            AND twin.status = 'failed' AND twin.seq > jobs.seq
    ));

-- name: ListFailedWorkflowJobs :many
-- ListFailedWorkflowJobs lists the failed jobs of workflows that match each
-- filter given, in enqueue order, so that a bulk retry retries a job's
-- dependencies (stored before it) first, through the index of rare
-- statuses.
SELECT id FROM jobs
WHERE status = 'failed' AND workflow_id IS NOT NULL
    AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind))
    AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue))
ORDER BY seq;

-- name: WakeRunners :exec
-- WakeRunners tells idle runners in every process, when the transaction
-- commits, that jobs became ready. Differs from SQLite, where every commit
-- wakes them: here only the insert trigger does, and a retry inserts nothing.
-- Its payload is 'released', not the insert trigger's '': a job it made ready
-- may stand before the place where a runner's claims of its queue resume
-- (after_priority and after_seq of FinishAndClaimJobs), so each runner
-- claims next from the head of its queues.
SELECT pg_notify(jobtable_channel(current_schema()), 'released');

-- name: DeleteJob :execrows
-- DeleteJob deletes a job that is not running.
DELETE FROM jobs WHERE id = @id AND status <> 'running';

-- name: ListRunners :many
-- ListRunners reads every registered runner, and whether its heartbeat is
-- not older than lease_seconds by the server's clock.
SELECT name, started_at, heartbeat_at, missing_keys,
    heartbeat_at >= now() - make_interval(secs => @lease_seconds) AS alive
FROM runners ORDER BY name;

-- name: ListHeldJobs :many
-- ListHeldJobs lists the running jobs, the runner holding each and its
-- queue, through the index of running rows.
SELECT runner, id, queue FROM jobs WHERE status = 'running' ORDER BY runner, seq;

-- name: JobStats :many
-- JobStats counts the jobs of each queue by status and, in the same pass,
-- counts the queued jobs that may run by now (due) and finds the earliest
-- run_at among them (now itself when none may).
SELECT queue, status, count(*) AS jobs,
    count(CASE WHEN status = 'queued' AND run_at <= @now THEN 1 END) AS due,
    COALESCE(min(CASE WHEN status = 'queued' AND run_at <= @now THEN run_at END), @now)::timestamptz
        AS oldest_run_at
FROM jobs GROUP BY queue, status ORDER BY queue, status;

-- name: FinishedPerMinute :many
-- FinishedPerMinute counts the jobs that finished since since, per minute and
-- status. A finished row never changes again, so its updated_at is its
-- finished_at: filtering on it lets the index of finished rows read only the
-- window. date_bin, unlike date_trunc, does not depend on the session's zone.
SELECT date_bin('1 minute', updated_at, TIMESTAMPTZ '2000-01-01 00:00:00+00')::timestamptz AS minute,
    status, count(*) AS jobs
FROM jobs
WHERE status IN ('succeeded', 'failed', 'cancelled') AND updated_at >= @since
GROUP BY minute, status ORDER BY minute, status;

-- name: ListSealedJobs :many
-- ListSealedJobs reads, in seq order after after_seq, up to max_jobs jobs
-- whose payload or result holds an encrypted secret (an object with the key
-- "$secret"): what Store.rotate_secrets re-encrypts. It reads every row, as
-- an operator's command may; no index serves it.
SELECT seq, id, payload, result FROM jobs
WHERE seq > @after_seq AND (payload LIKE '%"$secret"%' OR result LIKE '%"$secret"%')
ORDER BY seq LIMIT @max_jobs;

-- name: ResealJob :execrows
-- ResealJob stores a job's payload and result with their secrets encrypted
-- anew, unless either changed since they were read (a running job published
-- meanwhile): 0 then. updated_at is kept, since for a finished row it is its
-- finished_at (see FinishedPerMinute). Differs from SQLite by spelling only:
-- IS NOT DISTINCT FROM compares a null result.
UPDATE jobs SET payload = @new_payload, result = sqlc.narg(new_result)
WHERE id = @id AND payload = @old_payload
    AND result IS NOT DISTINCT FROM sqlc.narg(old_result);
