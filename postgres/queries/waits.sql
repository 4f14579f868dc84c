-- The queries of durable waiting: signals sent (Store.signal) and the jobs
-- waiting for them (JobContext.wait_for).

-- name: InsertSignal :one
-- InsertSignal stores a signal of name and key with its payload; returns its id.
INSERT INTO signals (name, key, payload, sent_at) VALUES (@name, @key, @payload, @now)
RETURNING id;

-- name: WakeWaitingJobs :one
-- WakeWaitingJobs makes every job waiting for a signal of name and key ready
-- now, and returns how many: the job's handler runs again and receives the
-- signal. It notifies the runners' channel (jobtable_channel) with 'ready:'
-- and each woken job's queue, delivered at commit, so the runners serving it
-- claim at once rather than at their poll. Differs by necessity from SQLite,
-- which has no NOTIFY: its runners watch the file.
WITH woken AS (
    UPDATE jobs SET run_at = @now, scheduled = false, updated_at = @now
    WHERE status = 'queued'
        AND id IN (SELECT job_id FROM job_waits WHERE name = @name AND key = @key)
    RETURNING queue
),
notified AS MATERIALIZED (
    SELECT count(pg_notify(jobtable_channel(current_schema()), CASE
        WHEN octet_length(queues.queue) < 7900 THEN 'ready:' || queues.queue ELSE '' END))
    FROM (SELECT DISTINCT queue FROM woken) AS queues
)
SELECT (SELECT count(*) FROM woken) AS woken FROM notified;

-- name: LockSignalKey :exec
-- LockSignalKey serializes, until the transaction ends, the writes about
-- signals of name and key: a signal sent (InsertSignal, WakeWaitingJobs)
-- and a job that begins to wait for one (SaveJobWait, SuspendJob). Without
-- it a signal committed while a job suspends could find the job still
-- running and the job not find the signal, each in its own snapshot. Differs
-- by necessity from SQLite, whose single writer serializes them already.
SELECT pg_advisory_xact_lock(
    hashtext('jobtable-signal:' || current_schema()), hashtext(@name || E'\n' || @key));

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

-- name: SuspendJob :one
-- SuspendJob puts the waiting job back in its queue while the claim of
-- attempt holds, as SnoozeJob does (using none of its attempts): from run_at
-- on, or at once when a signal of name and key newer than after_id is stored
-- already (one sent while the handler decided to wait). A job whose cancel
-- was requested is left running: its handler's attempt then ends as a
-- snooze, whose outcome cancels it and settles what depends on it. Returns
-- how many jobs it put back (0: not running under that claim, or its cancel
-- was requested). Run it after LockSignalKey. Like an
-- outcome, it notifies the runners' channel with 'ready:' and the job's
-- queue when that frees a slot of a queue with a concurrency or partition
-- limit, or when the job is ready at once, so the runners serving it look
-- again now rather than at their poll. It also notifies the job's id on the
-- channel of ended jobs, as PublishJobResult does (only while some process
-- waits), so that a stream of the job's progress sees it leave its worker at
-- once; a waiter for its end reads it and finds it queued.
WITH suspended AS (
    UPDATE jobs
    SET status = 'queued',
        max_attempts = max_attempts + 1,
        run_at = CASE WHEN EXISTS (
                SELECT 1 FROM signals
                WHERE signals.name = @name AND signals.key = @key AND signals.id > @after_id
            ) THEN @now::timestamptz ELSE @run_at::timestamptz END,
        scheduled = @run_at::timestamptz > @now::timestamptz AND NOT EXISTS (
                SELECT 1 FROM signals
                WHERE signals.name = @name AND signals.key = @key AND signals.id > @after_id
            ),
        runner = NULL,
            updated_at = @now
    WHERE jobs.id = @id AND jobs.status = 'running' AND jobs.attempt = @attempt
        AND NOT jobs.cancel_requested
    RETURNING jobs.id, jobs.queue, jobs.status, jobs.scheduled
),
watched AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()),
        CASE WHEN octet_length(id) < 7900 THEN id ELSE '' END)
    FROM suspended
    WHERE NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16)
),
released AS MATERIALIZED (
    SELECT count(pg_notify(jobtable_channel(current_schema()), CASE
        WHEN octet_length(put.queue) < 7900 THEN 'ready:' || put.queue ELSE '' END))
    FROM suspended AS put
    WHERE (put.status = 'queued' AND NOT put.scheduled) OR EXISTS (
        SELECT 1 FROM queues AS flow
        WHERE flow.name = put.queue
            AND (flow.concurrency IS NOT NULL OR flow.partition_limit IS NOT NULL)
    )
)
SELECT (SELECT count(*) FROM suspended) AS suspended
FROM released CROSS JOIN (SELECT count(*) AS sent FROM watched) AS w;

-- name: PruneSignals :execrows
-- PruneSignals deletes the signals sent before before.
DELETE FROM signals WHERE sent_at < @before;

-- name: ReadyScheduledJobs :execrows
-- ReadyScheduledJobs makes every scheduled job of queue ready now, its run_at
-- left as it was, but a job that sleeps or waits for a signal (its wait in
-- job_waits recorded by its last change): jobtable.testing's drain runs the
-- jobs scheduled for later with it, and a sleeping job only once its time has
-- come by the store's clock.
UPDATE jobs SET scheduled = false
WHERE status = 'queued' AND scheduled = true AND queue = @queue
    AND NOT EXISTS (
        SELECT 1 FROM job_waits
        WHERE job_waits.job_id = jobs.id AND job_waits.since = jobs.updated_at
    );
