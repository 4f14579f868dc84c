-- name: CreateJob :exec
-- CreateJob stores a queued job. Its insert trigger notifies idle runners in
-- every process when the transaction commits.
INSERT INTO jobs (id, kind, payload, created_at, updated_at)
VALUES (@id, @kind, @payload, @now, @now);

-- name: CreateJobs :batchexec
-- CreateJobs stores queued jobs, one statement per row, all sent at once.
INSERT INTO jobs (id, kind, payload, created_at, updated_at)
VALUES (@id, @kind, @payload, @now, @now);

-- name: FinishAndClaimJobs :many
-- FinishAndClaimJobs stores the outcomes of finished jobs and claims up to
-- max_jobs queued jobs for runner, in one statement: on a server each
-- statement costs a round trip and each transaction a flush to disk, and a
-- runner's workers free their slots as they finish, so both go together.
--
-- Job i of the arrays (ids[i], claimed as attempts[i]) succeeds with
-- results[i] when errors[i] is null, and otherwise fails with errors[i] and
-- keeps the result it published; either only while it is running under that
-- claim, as in SucceedJob and FailJob. Such a job comes back as a row with
-- finished true and only its id; a job missing from those rows is no longer
-- running under its claim.
--
-- The claim marks queued jobs running, oldest first, and returns them with
-- finished false and their new attempt. RETURNING does not keep the pick's
-- order: callers sort by seq. Differs from SQLite, whose single writer
-- serializes claims: here claims run concurrently, so the picked rows are
-- locked and rows another claim has locked are skipped; no job is claimed
-- twice and claims do not queue behind each other. The pick is a
-- MATERIALIZED CTE because a subquery in the WHERE clause may be run more than
-- once by the planner, and with SKIP LOCKED each run can pick other rows: one
-- claim could then take more than max_jobs. The finished jobs are running and
-- the picked ones queued, so the two updates never touch the same row.
WITH finished AS (
    UPDATE jobs
    SET status = CASE WHEN outcome.error IS NULL THEN 'succeeded' ELSE 'failed' END,
        result = CASE WHEN outcome.error IS NULL THEN outcome.result ELSE jobs.result END,
        error = outcome.error,
        updated_at = @now
    FROM (
        -- Set-returning functions in one select list run in step: row i
        -- holds element i of every array.
        SELECT unnest(@ids::text[]) AS id,
            unnest(@attempts::integer[]) AS attempt,
            unnest(sqlc.narg(results)::text[]) AS result,
            unnest(sqlc.narg(errors)::text[]) AS error
    ) AS outcome
    WHERE jobs.id = outcome.id AND jobs.status = 'running' AND jobs.attempt = outcome.attempt
    RETURNING jobs.id
),
picked AS MATERIALIZED (
    SELECT seq FROM jobs WHERE status = 'queued' ORDER BY seq LIMIT @max_jobs
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE jobs
    SET status = 'running', runner = @runner, attempt = jobs.attempt + 1, updated_at = @now
    FROM picked
    WHERE jobs.seq = picked.seq
    RETURNING jobs.seq, jobs.id, jobs.kind, jobs.payload, jobs.attempt
)
SELECT false AS finished, seq, id, kind, payload, attempt FROM claimed
UNION ALL
SELECT true, 0::bigint, id, '', '', 0 FROM finished;

-- name: PublishJobResult :execrows
-- PublishJobResult stores a partial result while the claim of attempt holds.
UPDATE jobs SET result = @result, updated_at = @now
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: SucceedJob :execrows
-- SucceedJob stores the final result while the claim of attempt holds.
UPDATE jobs SET status = 'succeeded', result = @result, updated_at = @now
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: FailJob :execrows
-- FailJob stores error as the job's error while the claim of attempt holds.
UPDATE jobs SET status = 'failed', error = @error, updated_at = @now
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: FailRunningJobs :execrows
-- FailRunningJobs fails the running jobs of the runner named runner: an
-- earlier process of the same name left them running.
UPDATE jobs SET status = 'failed', error = @error, updated_at = @now
WHERE status = 'running' AND runner = @runner;

-- name: FailJobsOfDeadRunners :execrows
-- FailJobsOfDeadRunners fails the running jobs of every runner whose
-- heartbeat is older than cutoff, or that no longer has a row; never those of
-- runner, the runner that asks, which is alive. It skips rows another
-- transaction holds (their runner is finishing them, or another runner's
-- maintenance fails them), so two runners' maintenance never deadlock.
UPDATE jobs SET status = 'failed', error = @error, updated_at = @now
WHERE seq IN (
    SELECT stale.seq FROM jobs AS stale
    WHERE stale.status = 'running'
        AND (stale.runner IS NULL OR (stale.runner <> @runner AND stale.runner NOT IN (
            SELECT name FROM runners WHERE heartbeat_at >= @cutoff
        )))
    FOR UPDATE OF stale SKIP LOCKED
);

-- name: ListRunningJobs :many
-- ListRunningJobs lists the jobs running under runner that have not changed
-- since before: a live runner compares them with the jobs it holds, to find a
-- claim whose reply it never received.
SELECT id, attempt FROM jobs
WHERE status = 'running' AND runner = @runner AND updated_at < @before;

-- name: GetJob :one
SELECT id, kind, status, result, error FROM jobs WHERE id = @id;

-- name: DeleteFinishedJobs :execrows
-- DeleteFinishedJobs deletes up to max_jobs jobs that finished before before,
-- oldest first, skipping rows another runner's maintenance is deleting.
DELETE FROM jobs WHERE seq IN (
    SELECT finished.seq FROM jobs AS finished
    WHERE finished.status IN ('succeeded', 'failed') AND finished.updated_at < @before
    ORDER BY finished.updated_at LIMIT @max_jobs
    FOR UPDATE SKIP LOCKED
);

-- name: RegisterRunner :exec
-- RegisterRunner records a starting runner, replacing an earlier one of the
-- same name.
INSERT INTO runners (name, started_at, heartbeat_at) VALUES (@name, @now, @now)
ON CONFLICT (name) DO UPDATE
SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at;

-- name: HeartbeatRunner :execrows
-- HeartbeatRunner renews a runner's lease; 0 rows means it lost its row.
UPDATE runners SET heartbeat_at = @now WHERE name = @name;

-- name: GetRunner :one
SELECT name, started_at, heartbeat_at FROM runners WHERE name = @name;

-- name: DeleteRunner :exec
DELETE FROM runners WHERE name = @name;

-- name: DeleteDeadRunners :execrows
-- DeleteDeadRunners forgets runners whose heartbeat is older than cutoff,
-- never name, the runner that asks. It skips rows another transaction holds:
-- a runner renewing its lease holds its own row, and two runners deleting
-- each other's rows would deadlock.
DELETE FROM runners WHERE name IN (
    SELECT stale.name FROM runners AS stale
    WHERE stale.heartbeat_at < @cutoff AND stale.name <> @name
    FOR UPDATE SKIP LOCKED
);
