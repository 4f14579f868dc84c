-- The dashboard's queries: search, the names to filter by, bulk actions by
-- filter, the per-kind figures and the health checks. The Store's public
-- methods run them; see src/jobtable/_operator/dashboard.py.

-- name: ListKindNames :many
-- ListKindNames reads every kind that has a job, without reading every row:
-- a skip-scan of jobs_by_kind, one index seek per kind (each finds the least
-- kind above the last).
WITH RECURSIVE names(kind) AS (
    SELECT (SELECT min(j.kind) FROM jobs AS j)
    UNION ALL
    SELECT (SELECT min(j.kind) FROM jobs AS j WHERE j.kind > names.kind)
    FROM names WHERE names.kind IS NOT NULL
)
SELECT CAST(kind AS TEXT) AS kind FROM names WHERE kind IS NOT NULL
ORDER BY kind;

-- name: ListQueueNames :many
-- ListQueueNames reads every queue that has a job as ListKindNames reads the
-- kinds: a skip-scan of jobs_by_queue.
WITH RECURSIVE names(queue) AS (
    SELECT (SELECT min(j.queue) FROM jobs AS j)
    UNION ALL
    SELECT (SELECT min(j.queue) FROM jobs AS j WHERE j.queue > names.queue)
    FROM names WHERE names.queue IS NOT NULL
)
SELECT CAST(queue AS TEXT) AS queue FROM names WHERE queue IS NOT NULL
ORDER BY queue;

-- name: SearchPayloads :many
-- SearchPayloads reads the records of up to max_jobs jobs, newest first,
-- among the scan most recent ones, whose payload holds text (ignoring ASCII
-- case). It reads at most scan rows, down the primary key, whatever the
-- table's size: a search of a payload is bounded, never a full scan.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM (
    SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
        attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
        finished_at, updated_at, tags, meta
    FROM jobs ORDER BY seq DESC LIMIT @scan
) AS recent
WHERE instr(lower(recent.payload), lower(CAST(@text AS TEXT))) > 0
ORDER BY seq DESC LIMIT @max_jobs;

-- name: CancelQueuedMatching :execrows
-- CancelQueuedMatching cancels up to max_jobs queued jobs, oldest first, that
-- match each filter given (a null filter matches all), as CancelQueuedJob
-- cancels one. It reads the queued rows only: the ready ones from jobs_queued
-- and the scheduled ones from jobs_scheduled, and sorts them.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE seq IN (
    SELECT seq FROM (
        SELECT seq FROM jobs
        WHERE status = 'queued' AND scheduled = 0
            AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR kind = sqlc.narg(kind))
            AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue))
        UNION ALL
        SELECT seq FROM jobs
        WHERE status = 'queued' AND scheduled = 1
            AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR kind = sqlc.narg(kind))
            AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue))
    )
    ORDER BY seq LIMIT @max_jobs
);

-- name: CancelPendingMatching :execrows
-- CancelPendingMatching cancels up to max_jobs pending jobs (of workflows,
-- waiting for dependencies), oldest first, that
-- match each filter given (a null filter matches all), as CancelQueuedJob
-- cancels one. It reads the pending rows (jobs_by_rare_status, which needs
-- its condition in the query to be chosen).
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE seq IN (
    SELECT seq FROM jobs
    WHERE status = 'pending'
        AND (status = 'failed' OR status = 'cancelled' OR status = 'pending')
        AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR kind = sqlc.narg(kind))
        AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue))
    ORDER BY seq LIMIT @max_jobs
);

-- name: RequestCancelMatching :execrows
-- RequestCancelMatching asks the runners holding the running jobs that match
-- each filter given to cancel them, as RequestCancel asks for one. The
-- running rows are few (no more than the runners' workers).
UPDATE jobs SET cancel_requested = 1, updated_at = @now
WHERE status = 'running' AND NOT cancel_requested
    AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR kind = sqlc.narg(kind))
    AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue));

-- name: DeleteMatching :execrows
-- DeleteMatching deletes up to max_jobs jobs, oldest first, that are not
-- running and match each filter given (a null filter matches all). A job
-- of a workflow that another job has not counted the end of is left: its
-- delete must settle that job first (ListNeededMatching lists them).
DELETE FROM jobs
WHERE seq IN (
    SELECT j.seq FROM jobs AS j
    WHERE j.status <> 'running'
        AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR j.status = sqlc.narg(status))
        AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR j.kind = sqlc.narg(kind))
        AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR j.queue = sqlc.narg(queue))
        AND (j.workflow_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM job_deps AS d WHERE d.dep = j.id AND d.done = 0
        ))
    ORDER BY j.seq LIMIT @max_jobs
);

-- name: ListNeededMatching :many
-- ListNeededMatching lists up to max_jobs jobs, oldest first, not running,
-- matching each filter given, that DeleteMatching leaves: jobs of a
-- workflow whose end another job has not counted. Each is deleted by id,
-- which settles the jobs that need it.
SELECT j.id FROM jobs AS j
WHERE j.status <> 'running' AND j.workflow_id IS NOT NULL
    AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR j.status = sqlc.narg(status))
    AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR j.kind = sqlc.narg(kind))
    AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR j.queue = sqlc.narg(queue))
    AND EXISTS (SELECT 1 FROM job_deps AS d WHERE d.dep = j.id AND d.done = 0)
ORDER BY j.seq LIMIT @max_jobs;

-- name: FinishedSince :many
-- FinishedSince reads the kind, status and times of up to max_jobs jobs that
-- finished since since, newest first, through the index of finished rows (a
-- finished row's updated_at is its finished_at), for the per-kind figures.
SELECT kind, status, run_at, started_at, CAST(updated_at AS TEXT) AS finished_at
FROM jobs INDEXED BY jobs_finished
WHERE (status = 'succeeded' OR status = 'failed' OR status = 'cancelled') AND updated_at >= @since
ORDER BY updated_at DESC LIMIT @max_jobs;

-- name: OldestDueByQueue :many
-- OldestDueByQueue reads, for each queue that has queued jobs due by now,
-- how many are due and the earliest run_at among them. It reads the queued
-- rows only: the ready ones from jobs_queued, the scheduled ones from
-- jobs_scheduled.
SELECT due.queue, count(*) AS jobs, CAST(min(due.run_at) AS TEXT) AS oldest_run_at
FROM (
    SELECT ready.queue, ready.run_at FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.run_at <= @now
    UNION ALL
    SELECT later.queue, later.run_at FROM jobs AS later
    WHERE later.status = 'queued' AND later.scheduled = 1 AND later.run_at <= @now
) AS due
GROUP BY due.queue ORDER BY due.queue;

-- name: ListRunningQueues :many
-- ListRunningQueues lists each running job's id, runner and queue, through the
-- index of running rows.
SELECT id, runner, queue FROM jobs WHERE status = 'running';
