-- Flow control: pauses, limits and their claims (schema version 4). The
-- limited claims run in one transaction after GetQueueFlow, and the writer
-- thread runs every transaction of a SQLite file one at a time, so two claims
-- never count the same free slot: the counts each one reads are exact.

-- name: GetQueueFlow :one
-- GetQueueFlow reads the flow control of queue when it has any: a row that
-- is paused or has a limit. None means ClaimNextJob claims it.
SELECT paused, concurrency, partition_limit, rate_limit, rate_period, rate_per_key
FROM queues
WHERE name = @queue AND (paused = 1 OR concurrency IS NOT NULL
    OR partition_limit IS NOT NULL OR rate_limit IS NOT NULL);

-- name: ClaimLimitedJobs :many
-- ClaimLimitedJobs is ClaimNextJob for a queue with a global concurrency
-- limit or a rate limit that is not per key: it claims at most the room the
-- limits leave, which it counts itself: concurrency less the jobs of queue
-- running, rate_limit less the starts recorded since since (now less the
-- rate period, in seconds since 1970). A null limit leaves max_jobs.
UPDATE jobs
SET status = 'running', runner = @runner, attempt = attempt + 1,
    started_at = @now, updated_at = @now
WHERE seq IN (
    SELECT ready.seq FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.queue = @queue
        AND (ready.sequence_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs AS prior
            WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks = 1)
        ))
    ORDER BY ready.priority, ready.seq
    LIMIT max(0, min(
        CAST(@max_jobs AS INTEGER),
        coalesce(CAST(sqlc.narg(concurrency) AS INTEGER) - (
            SELECT count(*) FROM jobs AS busy INDEXED BY jobs_running
            WHERE busy.status = 'running' AND busy.queue = @queue
        ), CAST(@max_jobs AS INTEGER)),
        coalesce(CAST(sqlc.narg(rate_limit) AS INTEGER) - (
            SELECT count(*) FROM queue_starts AS start
            WHERE start.queue = @queue AND start.started_at > CAST(@since AS REAL)
        ), CAST(@max_jobs AS INTEGER))
    ))
)
RETURNING seq, id, kind, payload, attempt, max_attempts, timeout, priority, traceparent, partition_key,
    workflow_id;

-- name: PickPartitionedJobs :many
-- PickPartitionedJobs picks the jobs a claim takes, as ClaimLimitedJobs does, for a queue with a partition
-- limit or a rate limit per key, and it is fair between keys. It finds every
-- key that has ready jobs (a skip scan of jobs_partition: one lookup per
-- key, not per job; the jobs without a key count as one more key), takes up
-- to key_cap of the oldest ready jobs of each (key_cap is at most max_jobs,
-- so no key is read further than a claim could take), and keeps those that
-- fit the key's room: partition_limit less the key's running jobs, and with
-- rate_per_key, rate_limit less the key's starts since since. It then claims
-- them in rounds, the oldest job of each key first, then the second oldest
-- of each, and so on (within a round by priority and seq), up to the
-- queue's room as ClaimLimitedJobs counts it. So a key with 10,000 ready
-- jobs takes one slot per round like a key with 3. ClaimJob then claims
-- each, in the same transaction. Differs by necessity from PostgreSQL, where
-- one statement picks and claims: sqlc's SQLite analyzer cannot resolve a
-- CTE that an UPDATE reads.
WITH RECURSIVE keys (partition_key) AS (
    SELECT min(first.partition_key) FROM jobs AS first
    WHERE first.status = 'queued' AND first.scheduled = 0 AND first.queue = @queue
        AND first.partition_key IS NOT NULL
    UNION ALL
    SELECT (
        SELECT min(later.partition_key) FROM jobs AS later
        WHERE later.status = 'queued' AND later.scheduled = 0 AND later.queue = @queue
            AND later.partition_key IS NOT NULL AND later.partition_key > keys.partition_key
    ) FROM keys WHERE keys.partition_key IS NOT NULL
),
heads AS (
    SELECT head.seq, head.priority,
        -- The key's room: what its running jobs, and its starts when the
        -- rate is per key, leave of the limits.
        min(
            coalesce(CAST(sqlc.narg(partition_limit) AS INTEGER) - (
                SELECT count(*) FROM jobs AS busy INDEXED BY jobs_running
                WHERE busy.status = 'running' AND busy.queue = @queue
                    AND busy.partition_key IS head.partition_key
            ), CAST(@key_cap AS INTEGER)),
            CASE WHEN CAST(@rate_per_key AS INTEGER) = 1 THEN coalesce(CAST(sqlc.narg(rate_limit) AS INTEGER) - (
                SELECT count(*) FROM queue_starts AS start
                WHERE start.queue = @queue AND start.started_at > CAST(@since AS REAL)
                    AND start.partition_key IS head.partition_key
            ), CAST(@key_cap AS INTEGER)) ELSE CAST(@key_cap AS INTEGER) END
        ) AS key_room,
        row_number() OVER (
            PARTITION BY head.partition_key ORDER BY head.priority, head.seq
        ) AS place
    FROM jobs AS head
    WHERE head.seq IN (
        SELECT keyed.seq FROM keys, jobs AS keyed
        WHERE keys.partition_key IS NOT NULL AND keyed.seq IN (
            SELECT ready.seq FROM jobs AS ready
            WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.queue = @queue
                AND ready.partition_key = keys.partition_key
                AND (ready.sequence_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM jobs AS prior
                    WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                        AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                        AND (prior.status IN ('queued', 'pending', 'running')
                            OR prior.sequence_blocks = 1)
                ))
            ORDER BY ready.priority, ready.seq LIMIT CAST(@key_cap AS INTEGER)
        )
        UNION ALL
        SELECT unkeyed.seq FROM (
            SELECT ready.seq FROM jobs AS ready
            WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.queue = @queue
                AND ready.partition_key IS NULL
                AND (ready.sequence_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM jobs AS prior
                    WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                        AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                        AND (prior.status IN ('queued', 'pending', 'running')
                            OR prior.sequence_blocks = 1)
                ))
            ORDER BY ready.priority, ready.seq LIMIT CAST(@key_cap AS INTEGER)
        ) AS unkeyed
    )
)
SELECT heads.seq FROM heads
WHERE heads.place <= heads.key_room
ORDER BY heads.place, heads.priority, heads.seq
LIMIT max(0, min(
    CAST(@max_jobs AS INTEGER),
    coalesce(CAST(sqlc.narg(concurrency) AS INTEGER) - (
        SELECT count(*) FROM jobs AS busy INDEXED BY jobs_running
        WHERE busy.status = 'running' AND busy.queue = @queue
    ), CAST(@max_jobs AS INTEGER)),
    CASE WHEN CAST(@rate_per_key AS INTEGER) = 1 THEN CAST(@max_jobs AS INTEGER) ELSE coalesce(
        CAST(sqlc.narg(rate_limit) AS INTEGER) - (
            SELECT count(*) FROM queue_starts AS start
            WHERE start.queue = @queue AND start.started_at > CAST(@since AS REAL)
        ), CAST(@max_jobs AS INTEGER)) END
));

-- name: ClaimJob :one
-- ClaimJob marks the queued job seq running for runner, as ClaimNextJob
-- does, and returns it with its new attempt; nothing when it is not queued.
UPDATE jobs
SET status = 'running', runner = @runner, attempt = attempt + 1,
    started_at = @now, updated_at = @now
WHERE seq = @seq AND status = 'queued'
RETURNING seq, id, kind, payload, attempt, max_attempts, timeout, priority, traceparent, partition_key,
    workflow_id;

-- name: RecordStart :exec
-- RecordStart records the start of one attempt of a job of a rate-limited queue.
INSERT INTO queue_starts (queue, partition_key, started_at)
VALUES (@queue, sqlc.narg(partition_key), @started_at);

-- name: ForgetStarts :exec
-- ForgetStarts deletes the starts of queue recorded before before: no
-- window a claim counts reaches back to them.
DELETE FROM queue_starts WHERE queue = @queue AND started_at <= @before;

-- name: NextRateOpening :one
-- NextRateOpening returns the oldest start of queue that the rate window
-- still counts (recorded after since, in seconds since 1970): the window
-- admits another start once it leaves, a rate period after it. No row when
-- the window counts none. A runner whose claim the rate held back sleeps
-- until then, not until its poll. Differs from PostgreSQL, which measures the
-- window by the server's clock: here the claiming process's clock does.
SELECT started_at FROM queue_starts
WHERE queue = @queue AND started_at > CAST(@since AS REAL)
ORDER BY started_at LIMIT 1;

-- name: DeclareQueue :exec
-- DeclareQueue records the limits a runner's code declares for queue. They
-- become the queue's limits unless an operator set limits (overridden),
-- which are kept until ClearQueueLimits. A pause is never declared: it is
-- the operator's, and kept.
INSERT INTO queues (
    name, concurrency, partition_limit, rate_limit, rate_period, rate_per_key,
    declared_concurrency, declared_partition_limit, declared_rate_limit,
    declared_rate_period, declared_rate_per_key, updated_at
)
VALUES (
    @name, sqlc.narg(concurrency), sqlc.narg(partition_limit), sqlc.narg(rate_limit),
    sqlc.narg(rate_period), @rate_per_key,
    sqlc.narg(concurrency), sqlc.narg(partition_limit), sqlc.narg(rate_limit),
    sqlc.narg(rate_period), @rate_per_key, @now
)
ON CONFLICT (name) DO UPDATE SET
    declared_concurrency = excluded.declared_concurrency,
    declared_partition_limit = excluded.declared_partition_limit,
    declared_rate_limit = excluded.declared_rate_limit,
    declared_rate_period = excluded.declared_rate_period,
    declared_rate_per_key = excluded.declared_rate_per_key,
    concurrency = CASE WHEN queues.overridden = 1 THEN queues.concurrency ELSE excluded.concurrency END,
    partition_limit = CASE WHEN queues.overridden = 1 THEN queues.partition_limit ELSE excluded.partition_limit END,
    rate_limit = CASE WHEN queues.overridden = 1 THEN queues.rate_limit ELSE excluded.rate_limit END,
    rate_period = CASE WHEN queues.overridden = 1 THEN queues.rate_period ELSE excluded.rate_period END,
    rate_per_key = CASE WHEN queues.overridden = 1 THEN queues.rate_per_key ELSE excluded.rate_per_key END,
    updated_at = excluded.updated_at;

-- name: SetQueueLimits :exec
-- SetQueueLimits sets the limits of queue as an operator: they are kept,
-- whatever runners declare, until ClearQueueLimits.
INSERT INTO queues (
    name, concurrency, partition_limit, rate_limit, rate_period, rate_per_key, overridden, updated_at
)
VALUES (
    @name, sqlc.narg(concurrency), sqlc.narg(partition_limit), sqlc.narg(rate_limit),
    sqlc.narg(rate_period), @rate_per_key, 1, @now
)
ON CONFLICT (name) DO UPDATE SET
    concurrency = excluded.concurrency, partition_limit = excluded.partition_limit,
    rate_limit = excluded.rate_limit, rate_period = excluded.rate_period,
    rate_per_key = excluded.rate_per_key, overridden = 1, updated_at = excluded.updated_at;

-- name: ClearQueueLimits :execrows
-- ClearQueueLimits drops an operator's limits of queue: the limits the code
-- declared last apply again.
UPDATE queues
SET concurrency = declared_concurrency, partition_limit = declared_partition_limit,
    rate_limit = declared_rate_limit, rate_period = declared_rate_period,
    rate_per_key = declared_rate_per_key, overridden = 0, updated_at = @now
WHERE name = @name;

-- name: SetQueuePaused :exec
-- SetQueuePaused pauses or resumes queue.
INSERT INTO queues (name, paused, updated_at) VALUES (@name, @paused, @now)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

-- name: DropEmptyQueue :exec
-- DropEmptyQueue deletes the row of queue once it holds nothing: not paused,
-- no operator's limits, no limits declared. A resumed queue whose name was
-- mistyped leaves no row behind; a queue without a row claims as before.
DELETE FROM queues
WHERE name = @name AND paused = 0 AND overridden = 0
    AND declared_concurrency IS NULL AND declared_partition_limit IS NULL
    AND declared_rate_limit IS NULL;

-- name: ListQueues :many
-- ListQueues reads every queue that has a row in queues or jobs that wait or
-- run, with its flow control (null for a queue without a row) and how many
-- of its jobs are queued and running.
SELECT names.name AS name,
    CAST(coalesce(flow.paused, 0) AS INTEGER) AS paused,
    flow.concurrency, flow.partition_limit, flow.rate_limit, flow.rate_period,
    CAST(coalesce(flow.rate_per_key, 0) AS INTEGER) AS rate_per_key,
    CAST(coalesce(flow.overridden, 0) AS INTEGER) AS overridden,
    (SELECT count(*) FROM jobs AS waiting
        WHERE waiting.status = 'queued' AND waiting.queue = names.name) AS queued,
    (SELECT count(*) FROM jobs AS busy INDEXED BY jobs_running
        WHERE busy.status = 'running' AND busy.queue = names.name) AS running
FROM (
    SELECT name FROM queues
    UNION SELECT DISTINCT queue FROM jobs WHERE status = 'queued' OR status = 'running'
) AS names
LEFT JOIN queues AS flow ON flow.name = names.name
ORDER BY names.name;

-- name: GetWaitFacts :one
-- GetWaitFacts reads what may hold back the queued job id: its queue's flow
-- control, the counts its limits compare with (starts within the rate
-- period before now_seconds, in seconds since 1970), and whether an earlier job of its sequence holds it
-- back. The caller decides which reason to show.
SELECT
    CAST(coalesce(flow.paused, 0) AS INTEGER) AS paused,
    flow.concurrency, flow.partition_limit, flow.rate_limit,
    CAST(coalesce(flow.rate_per_key, 0) AS INTEGER) AS rate_per_key,
    (SELECT count(*) FROM jobs AS busy INDEXED BY jobs_running
        WHERE busy.status = 'running' AND busy.queue = job.queue) AS running,
    (SELECT count(*) FROM jobs AS busy INDEXED BY jobs_running
        WHERE busy.status = 'running' AND busy.queue = job.queue
            AND busy.partition_key IS job.partition_key) AS running_in_key,
    (SELECT count(*) FROM queue_starts AS start
        WHERE start.queue = job.queue
            AND start.started_at > @now_seconds - coalesce(flow.rate_period, 0)) AS starts,
    (SELECT count(*) FROM queue_starts AS start
        WHERE start.queue = job.queue
            AND start.started_at > @now_seconds - coalesce(flow.rate_period, 0)
            AND start.partition_key IS job.partition_key) AS starts_in_key,
    EXISTS (
        SELECT 1 FROM jobs AS prior
        WHERE job.sequence_key IS NOT NULL AND prior.sequence_key = job.sequence_key
            AND prior.seq < job.seq AND prior.status <> 'succeeded'
            AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks = 1)
    ) AS behind_sequence
FROM jobs AS job
LEFT JOIN queues AS flow ON flow.name = job.queue
WHERE job.id = @id AND job.status = 'queued';
