-- The dashboard's queries: search, the names to filter by, bulk actions by
-- filter, the per-kind figures and the health checks. The Store's public
-- methods run them; see src/jobtable/_operator/dashboard.py.

-- name: ListKindNames :many
-- ListKindNames reads every kind that has a job, without reading every row:
-- a skip-scan of jobs_by_status_kind (a recursive CTE, one index seek per
-- status and kind, each finding the least kind above the last), plus the
-- running rows' kinds, which that index leaves out (jobs_running reads them).
WITH RECURSIVE names(status, kind) AS (
    SELECT statuses.status, (SELECT min(j.kind) FROM jobs AS j
        WHERE j.status = statuses.status AND j.status <> 'running')
    FROM unnest(ARRAY['queued', 'succeeded', 'failed', 'cancelled', 'pending']::text[])
        AS statuses(status)
    UNION ALL
    SELECT names.status, (SELECT min(j.kind) FROM jobs AS j
        WHERE j.status = names.status AND j.status <> 'running' AND j.kind > names.kind)
    FROM names WHERE names.kind IS NOT NULL
)
SELECT names.kind::text AS kind FROM names WHERE names.kind IS NOT NULL
UNION
SELECT jobs.kind FROM jobs WHERE jobs.status = 'running'
ORDER BY kind;

-- name: ListQueueNames :many
-- ListQueueNames reads every queue that has a job as ListKindNames reads the
-- kinds: a skip-scan of jobs_by_status_queue, plus the running rows' queues.
WITH RECURSIVE names(status, queue) AS (
    SELECT statuses.status, (SELECT min(j.queue) FROM jobs AS j
        WHERE j.status = statuses.status AND j.status <> 'running')
    FROM unnest(ARRAY['queued', 'succeeded', 'failed', 'cancelled', 'pending']::text[])
        AS statuses(status)
    UNION ALL
    SELECT names.status, (SELECT min(j.queue) FROM jobs AS j
        WHERE j.status = names.status AND j.status <> 'running' AND j.queue > names.queue)
    FROM names WHERE names.queue IS NOT NULL
)
SELECT names.queue::text AS queue FROM names WHERE names.queue IS NOT NULL
UNION
SELECT jobs.queue FROM jobs WHERE jobs.status = 'running'
ORDER BY queue;

-- name: SearchPayloads :many
-- SearchPayloads reads the records of up to max_jobs jobs, newest first,
-- among the scan most recent ones, whose payload holds text (ignoring
-- case). It reads at most scan rows, down the primary key, whatever the
-- table's size: a search of a payload is bounded, never a full scan.
SELECT recent.seq, recent.id, recent.kind, recent.queue, recent.priority, recent.status,
    recent.payload, recent.result, recent.error, recent.errors, recent.runner, recent.attempt,
    recent.max_attempts, recent.timeout, recent.cancel_requested, recent.run_at,
    recent.created_at, recent.started_at, recent.finished_at, recent.updated_at,
    recent.tags, recent.meta
FROM (
    SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
        attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
        finished_at, updated_at, tags, meta
    FROM jobs ORDER BY seq DESC LIMIT @scan::bigint
) AS recent
WHERE strpos(lower(recent.payload), lower(@text::text)) > 0
ORDER BY recent.seq DESC LIMIT @max_jobs::bigint;

-- name: CancelQueuedMatching :execrows
-- CancelQueuedMatching cancels up to max_jobs queued jobs, oldest first, that
-- match each filter given (a null filter matches all), as CancelQueuedJob
-- cancels one.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE seq IN (
    SELECT j.seq FROM jobs AS j
    WHERE j.status = 'queued' AND j.status <> 'running'
        AND (sqlc.narg(kind)::text IS NULL OR j.kind = sqlc.narg(kind))
        AND (sqlc.narg(queue)::text IS NULL OR j.queue = sqlc.narg(queue))
    ORDER BY j.seq LIMIT @max_jobs::bigint
    FOR UPDATE SKIP LOCKED
);

-- name: CancelPendingMatching :execrows
-- CancelPendingMatching cancels up to max_jobs pending jobs (of workflows,
-- waiting for dependencies), oldest first, that
-- match each filter given (a null filter matches all), as CancelQueuedJob
-- cancels one.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE seq IN (
    SELECT j.seq FROM jobs AS j
    WHERE j.status = 'pending' AND j.status <> 'running'
        AND (sqlc.narg(kind)::text IS NULL OR j.kind = sqlc.narg(kind))
        AND (sqlc.narg(queue)::text IS NULL OR j.queue = sqlc.narg(queue))
    ORDER BY j.seq LIMIT @max_jobs::bigint
    FOR UPDATE SKIP LOCKED
);

-- name: RequestCancelMatching :execrows
-- RequestCancelMatching asks the runners holding the running jobs that match
-- each filter given to cancel them, as RequestCancel asks for one. The
-- running rows are few (no more than the runners' workers).
UPDATE jobs SET cancel_requested = true, updated_at = @now
WHERE status = 'running' AND NOT cancel_requested
    AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind))
    AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue));

-- name: DeleteMatching :execrows
-- DeleteMatching deletes up to max_jobs jobs, oldest first, that are not
-- running and match each filter given (a null filter matches all). A job
-- of a workflow that another job has not counted the end of is left: its
-- delete must settle that job first (ListNeededMatching lists them).
DELETE FROM jobs
WHERE seq IN (
    SELECT j.seq FROM jobs AS j
    WHERE j.status <> 'running'
        AND (sqlc.narg(status)::text IS NULL OR j.status = sqlc.narg(status))
        AND (sqlc.narg(kind)::text IS NULL OR j.kind = sqlc.narg(kind))
        AND (sqlc.narg(queue)::text IS NULL OR j.queue = sqlc.narg(queue))
        AND (j.workflow_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM job_deps AS d WHERE d.dep = j.id AND NOT d.done
        ))
    ORDER BY j.seq LIMIT @max_jobs::bigint
    FOR UPDATE SKIP LOCKED
);

-- name: ListNeededMatching :many
-- ListNeededMatching lists up to max_jobs jobs, oldest first, not running,
-- matching each filter given, that DeleteMatching leaves: jobs of a
-- workflow whose end another job has not counted. Each is deleted by id,
-- which settles the jobs that need it.
SELECT j.id FROM jobs AS j
WHERE j.status <> 'running' AND j.workflow_id IS NOT NULL
    AND (sqlc.narg(status)::text IS NULL OR j.status = sqlc.narg(status))
    AND (sqlc.narg(kind)::text IS NULL OR j.kind = sqlc.narg(kind))
    AND (sqlc.narg(queue)::text IS NULL OR j.queue = sqlc.narg(queue))
    AND EXISTS (SELECT 1 FROM job_deps AS d WHERE d.dep = j.id AND NOT d.done)
ORDER BY j.seq LIMIT @max_jobs::bigint;

-- name: FinishedSince :many
-- FinishedSince reads the kind, status and times of up to max_jobs jobs that
-- finished since since, newest first, through the index of finished rows (a
-- finished row's updated_at is its finished_at), for the per-kind figures.
SELECT kind, status, run_at, started_at, updated_at AS finished_at
FROM jobs
WHERE status IN ('succeeded', 'failed', 'cancelled') AND updated_at >= @since
ORDER BY updated_at DESC LIMIT @max_jobs::bigint;

-- name: OldestDueByQueue :many
-- OldestDueByQueue reads, for each queue that has queued jobs due by now,
-- how many are due and the earliest run_at among them. It reads the queued
-- rows only.
SELECT queue, count(*) AS jobs, min(run_at)::timestamptz AS oldest_run_at
FROM jobs
WHERE status = 'queued' AND status <> 'running' AND run_at <= @now
GROUP BY queue ORDER BY queue;

-- name: ListRunningQueues :many
-- ListRunningQueues lists each running job's id, runner and queue, through the
-- index of running rows.
SELECT id, runner, queue FROM jobs WHERE status = 'running';
