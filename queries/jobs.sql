-- name: CreateJob :exec
-- CreateJob stores a queued job.
INSERT INTO jobs (id, kind, payload, created_at, updated_at)
VALUES (@id, @kind, @payload, @now, @now);

-- name: CreateJobs :batchexec
-- CreateJobs stores queued jobs, one statement per row, all sent at once.
INSERT INTO jobs (id, kind, payload, created_at, updated_at)
VALUES (@id, @kind, @payload, @now, @now);

-- name: ClaimNextJob :many
-- ClaimNextJob marks up to max_jobs queued jobs running for runner, oldest
-- first, and returns them with their new attempt. RETURNING does not keep the
-- subquery's order: callers sort by seq.
UPDATE jobs
SET status = 'running', runner = @runner, attempt = attempt + 1, updated_at = @now
WHERE seq IN (
    SELECT seq FROM jobs WHERE status = 'queued' ORDER BY seq LIMIT @max_jobs
)
RETURNING seq, id, kind, payload, attempt;

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
-- runner, the runner that asks, which is alive.
UPDATE jobs SET status = 'failed', error = @error, updated_at = @now
WHERE status = 'running'
    AND (runner IS NULL OR (runner <> @runner AND runner NOT IN (
        SELECT name FROM runners WHERE heartbeat_at >= @cutoff
    )));

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
-- oldest first.
DELETE FROM jobs WHERE seq IN (
    SELECT finished.seq FROM jobs AS finished
    WHERE finished.status IN ('succeeded', 'failed') AND finished.updated_at < @before
    ORDER BY finished.updated_at LIMIT @max_jobs
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
-- never name, the runner that asks.
DELETE FROM runners WHERE heartbeat_at < @cutoff AND name <> @name;
