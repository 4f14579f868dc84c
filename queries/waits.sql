-- The queries of durable waiting: signals sent (Store.signal) and the jobs
-- waiting for them (JobContext.wait_for).

-- name: InsertSignal :one
-- InsertSignal stores a signal of name and key with its payload; returns its id.
INSERT INTO signals (name, key, payload, sent_at) VALUES (@name, @key, @payload, @now)
RETURNING id;

-- name: WakeWaitingJobs :execrows
-- WakeWaitingJobs makes every job waiting for a signal of name and key ready
-- now: the job's handler runs again and receives the signal.
UPDATE jobs SET run_at = @now, scheduled = 0, updated_at = @now
WHERE status = 'queued'
    AND id IN (SELECT job_id FROM job_waits WHERE name = @name AND key = @key);

-- name: FindSignal :one
-- FindSignal reads the oldest signal of name and key newer than after_id.
SELECT id, payload FROM signals
WHERE name = @name AND key = @key AND id > @after_id
ORDER BY id LIMIT 1;

-- name: GetJobWait :one
-- GetJobWait reads what the job job_id waits for, if it waits.
SELECT position, name, key, after_id, deadline, since FROM job_waits WHERE job_id = @job_id;

-- name: SaveJobWait :exec
-- SaveJobWait records what the job job_id waits for, replacing its last wait.
INSERT INTO job_waits (job_id, position, name, key, after_id, deadline, since)
VALUES (@job_id, @position, @name, @key, @after_id, @deadline, @now)
ON CONFLICT (job_id) DO UPDATE SET position = excluded.position, name = excluded.name,
    key = excluded.key, after_id = excluded.after_id, deadline = excluded.deadline,
    since = excluded.since;

-- name: EndJobWait :execrows
-- EndJobWait forgets what the job job_id waited for: its wait was answered.
DELETE FROM job_waits WHERE job_id = @job_id;

-- name: SuspendJob :execrows
-- SuspendJob puts the waiting job back in its queue while the claim of
-- attempt holds, as SnoozeJob does (using none of its attempts): from run_at
-- on, or at once when a signal of name and key newer than after_id is stored
-- already (one sent while the handler decided to wait). A job whose cancel
-- was requested is left running: its handler's attempt then ends as a
-- snooze, whose outcome cancels it and settles what depends on it.
UPDATE jobs
SET status = 'queued',
    max_attempts = max_attempts + 1,
    run_at = CASE WHEN EXISTS (
            SELECT 1 FROM signals
            WHERE signals.name = @name AND signals.key = @key AND signals.id > @after_id
        ) THEN @now ELSE @run_at END,
    scheduled = NOT EXISTS (
            SELECT 1 FROM signals
            WHERE signals.name = @name AND signals.key = @key AND signals.id > @after_id
        ) AND @run_at > @now,
    runner = NULL,
    updated_at = @now
WHERE jobs.id = @id AND jobs.status = 'running' AND jobs.attempt = @attempt
    AND NOT jobs.cancel_requested;

-- name: PruneSignals :execrows
-- PruneSignals deletes the signals sent before before.
DELETE FROM signals WHERE sent_at < @before;

-- name: ReadyScheduledJobs :execrows
-- ReadyScheduledJobs makes every scheduled job of queue ready now, its run_at
-- left as it was, but a job that sleeps or waits for a signal (its wait in
-- job_waits recorded by its last change): jobtable.testing's drain runs the
-- jobs scheduled for later with it, and a sleeping job only once its time has
-- come by the store's clock.
UPDATE jobs SET scheduled = 0
WHERE status = 'queued' AND scheduled = 1 AND queue = @queue
    AND NOT EXISTS (
        SELECT 1 FROM job_waits
        WHERE job_waits.job_id = jobs.id AND job_waits.since = jobs.updated_at
    );
