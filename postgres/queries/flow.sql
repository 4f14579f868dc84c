-- Flow control: pauses, limits and their claims (schema version 4).
--
-- Why a lock: a limit is a count over rows that other claims are changing.
-- Two runners claiming at once under READ COMMITTED would each count the
-- other's claim as not yet made, and together start more than the limit
-- allows; SKIP LOCKED makes this worse, not better, since each skips what the
-- other took. So a claim of a queue that has a limit first locks the queue's
-- row in queues (LockQueueFlow, SELECT ... FOR UPDATE), which serializes the
-- limited claims of that queue, and then, in a later statement of the same
-- transaction (a fresh snapshot, taken after the lock was granted, so it sees
-- every claim committed before), counts and claims (ClaimLimitedJobs or
-- ClaimPartitionedJobs). Jobs that finish meanwhile only free slots, so the
-- counts can only be too high, never too low. A queue without limits takes
-- no lock: FinishAndClaimJobs claims it as before, and claims of different
-- queues never wait for each other. Counters kept in the queues row were the
-- other choice; they would need every outcome, interruption, cancel and
-- delete to update them in step, and a missed one would leak a slot forever,
-- where counting the jobs table cannot leak.
--
-- The lock is held across round trips, so it must not outlive a client that
-- stops between them (SIGSTOP, a paused VM): each pooled connection sets
-- idle_in_transaction_session_timeout (ConfigureSession, 5 s by default), and
-- the server ends a claim left waiting that long for its next statement,
-- freeing the row for the queue's other claims and for DeclareQueue. The
-- stopped runner then finds its connection closed, a transient error, and
-- claims again; the ended claim kept nothing.

-- name: LockQueueFlow :one
-- LockQueueFlow reads the flow control of queue when it has any (a row that
-- is paused or has a limit), and locks that row until the transaction ends.
-- None means FinishAndClaimJobs claims it, without a lock.
SELECT paused, concurrency, partition_limit, rate_limit, rate_period, rate_per_key
FROM queues
WHERE name = @queue AND (paused OR concurrency IS NOT NULL
    OR partition_limit IS NOT NULL OR rate_limit IS NOT NULL)
FOR UPDATE;

-- name: GetQueueFlow :one
-- GetQueueFlow reads what LockQueueFlow reads, without the lock: a runner
-- whose claim came back short looks whether its queue gained flow control.
SELECT paused, concurrency, partition_limit, rate_limit, rate_period, rate_per_key
FROM queues
WHERE name = @queue AND (paused OR concurrency IS NOT NULL
    OR partition_limit IS NOT NULL OR rate_limit IS NOT NULL);

-- name: SkipJit :exec
-- SkipJit turns JIT compilation off until the transaction ends. A
-- partitioned claim runs it first: the planner prices the scan for the jobs
-- without a key by the whole backlog, and past about 15,000 queued jobs that
-- price turns on JIT, whose compiling cost a claim a quarter of a second.
SELECT set_config('jit', 'off', true);

-- name: ClaimLimitedJobs :many
-- ClaimLimitedJobs claims, as FinishAndClaimJobs does, at most the room the
-- limits of queue leave: concurrency less its running jobs, rate_limit less
-- the starts recorded within the last rate_period seconds of the server's
-- clock (a null limit leaves max_jobs); it records each start when the
-- queue has a rate, and forgets the starts older than the period. Run it
-- after LockQueueFlow, in the same transaction.
--
-- The pick takes the first max_jobs ready jobs under a plain LIMIT, which the
-- planner sizes, and then as many of them as the limits leave room for. One
-- LIMIT counted at run time instead would make the planner size the pick as a
-- tenth of the queue's backlog: it then joined the whole jobs table, and past
-- about 100,000 queued jobs its estimate turned on JIT compilation, which
-- costs more than the claim. The pick locks up to max_jobs rows, a few more
-- than it may claim, until the transaction ends; the claims of the queue take
-- turns behind LockQueueFlow anyway, and SKIP LOCKED passes over rows an
-- operator's write holds.
WITH picked AS MATERIALIZED (
    SELECT first.seq FROM (
        SELECT ready.seq, ready.priority FROM jobs AS ready
        WHERE ready.status = 'queued' AND ready.scheduled = false AND ready.queue = @queue
            AND (ready.sequence_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM jobs AS prior
                WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                    AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                    AND (prior.status IN ('queued', 'pending', 'running')
                        OR prior.sequence_blocks)
            ))
        ORDER BY ready.priority, ready.seq
        LIMIT @max_jobs::integer
        FOR UPDATE SKIP LOCKED
    ) AS first
    ORDER BY first.priority, first.seq
    LIMIT GREATEST(0, LEAST(
        @max_jobs::integer,
        COALESCE(sqlc.narg(concurrency)::integer - (
            SELECT count(*) FROM jobs AS busy
            WHERE busy.status = 'running' AND busy.queue = @queue
        ), @max_jobs::integer),
        COALESCE(sqlc.narg(rate_limit)::integer - (
            SELECT count(*) FROM queue_starts AS start
            WHERE start.queue = @queue AND start.started_at
                > statement_timestamp() - make_interval(secs => sqlc.narg(rate_period)::float8)
        ), @max_jobs::integer)
    ))
),
claimed AS (
    UPDATE jobs
    SET status = 'running', runner = @runner, attempt = jobs.attempt + 1,
        started_at = @now, updated_at = @now
    -- An array, not a join: the planner cannot size picked (its LIMIT is
    -- counted at run time) and would hash the whole jobs table to join it.
    WHERE jobs.seq = ANY(ARRAY(SELECT picked.seq FROM picked))
    RETURNING jobs.seq, jobs.id, jobs.kind, jobs.payload, jobs.attempt, jobs.max_attempts,
        jobs.timeout, jobs.priority, jobs.traceparent, jobs.partition_key, jobs.workflow_id
),
started AS (
    INSERT INTO queue_starts (queue, partition_key, started_at)
    SELECT @queue, claimed.partition_key, statement_timestamp() FROM claimed
    WHERE sqlc.narg(rate_limit)::integer IS NOT NULL
),
forgotten AS (
    DELETE FROM queue_starts
    WHERE queue = @queue AND started_at
        <= statement_timestamp() - make_interval(secs => sqlc.narg(rate_period)::float8)
)
SELECT seq, id, kind, payload, attempt, max_attempts, timeout, priority, traceparent,
    partition_key, workflow_id
FROM claimed;

-- name: ClaimPartitionedJobs :many
-- ClaimPartitionedJobs is ClaimLimitedJobs for a queue with a partition
-- limit or a rate limit per key, and it is fair between keys. It finds every
-- key that has ready jobs (a skip scan of jobs_partition: one lookup per
-- key, not per job; the jobs without a key count as one more key), takes up
-- to key_cap of the oldest ready jobs of each (key_cap is at most max_jobs,
-- so no key is read further than a claim could take), and keeps those that
-- fit the key's room: partition_limit less the key's running jobs, and with
-- rate_per_key, rate_limit less the key's starts within the period. It
-- claims them in rounds, the oldest job of each key first, then the second
-- oldest of each, and so on (within a round by priority and seq), up to the
-- queue's room as ClaimLimitedJobs counts it. So a key with 10,000 ready
-- jobs takes one slot per round like a key with 3. Run it after
-- LockQueueFlow, in the same transaction. The window function rules out
-- FOR UPDATE on the pick: the claim re-checks that each job is still queued.
WITH RECURSIVE keys (partition_key) AS (
    (
        SELECT first.partition_key FROM jobs AS first
        WHERE first.status = 'queued' AND first.scheduled = false AND first.queue = @queue
            AND first.partition_key IS NOT NULL
        ORDER BY first.partition_key LIMIT 1
    )
    UNION ALL
    SELECT (
        SELECT later.partition_key FROM jobs AS later
        WHERE later.status = 'queued' AND later.scheduled = false AND later.queue = @queue
            AND later.partition_key IS NOT NULL AND later.partition_key > keys.partition_key
        ORDER BY later.partition_key LIMIT 1
    ) FROM keys WHERE keys.partition_key IS NOT NULL
),
busy AS (
    SELECT running.partition_key FROM jobs AS running
    WHERE running.status = 'running' AND running.queue = @queue
),
recent AS (
    SELECT start.partition_key FROM queue_starts AS start
    WHERE start.queue = @queue AND start.started_at
        > statement_timestamp() - make_interval(secs => sqlc.narg(rate_period)::float8)
),
candidates AS (
    SELECT ready.seq, ready.priority, ready.partition_key
    FROM keys CROSS JOIN LATERAL (
        SELECT head.seq, head.priority, head.partition_key FROM jobs AS head
        WHERE head.status = 'queued' AND head.scheduled = false AND head.queue = @queue
            AND head.partition_key = keys.partition_key
            AND (head.sequence_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM jobs AS prior
                WHERE prior.sequence_key = head.sequence_key AND prior.seq < head.seq
                    AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                    AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks)
            ))
        ORDER BY head.priority, head.seq LIMIT @key_cap::integer
    ) AS ready
    WHERE keys.partition_key IS NOT NULL
    UNION ALL
    (
        SELECT head.seq, head.priority, head.partition_key FROM jobs AS head
        WHERE head.status = 'queued' AND head.scheduled = false AND head.queue = @queue
            AND head.partition_key IS NULL
            AND (head.sequence_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM jobs AS prior
                WHERE prior.sequence_key = head.sequence_key AND prior.seq < head.seq
                    AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                    AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks)
            ))
        ORDER BY head.priority, head.seq LIMIT @key_cap::integer
    )
),
heads AS (
    SELECT candidates.seq, candidates.priority,
        row_number() OVER (
            PARTITION BY candidates.partition_key ORDER BY candidates.priority, candidates.seq
        ) AS place,
        LEAST(
            COALESCE(sqlc.narg(partition_limit)::integer - (
                SELECT count(*) FROM busy
                WHERE busy.partition_key IS NOT DISTINCT FROM candidates.partition_key
            ), @key_cap::integer),
            CASE WHEN @rate_per_key::boolean THEN COALESCE(sqlc.narg(rate_limit)::integer - (
                SELECT count(*) FROM recent
                WHERE recent.partition_key IS NOT DISTINCT FROM candidates.partition_key
            ), @key_cap::integer) ELSE @key_cap::integer END
        ) AS key_room
    FROM candidates
),
picked AS MATERIALIZED (
    SELECT heads.seq FROM heads
    WHERE heads.place <= heads.key_room
    ORDER BY heads.place, heads.priority, heads.seq
    LIMIT GREATEST(0, LEAST(
        @max_jobs::integer,
        COALESCE(sqlc.narg(concurrency)::integer - (SELECT count(*) FROM busy), @max_jobs::integer),
        CASE WHEN @rate_per_key::boolean THEN @max_jobs::integer
            ELSE COALESCE(sqlc.narg(rate_limit)::integer - (SELECT count(*) FROM recent),
                @max_jobs::integer) END
    ))
),
claimed AS (
    UPDATE jobs
    SET status = 'running', runner = @runner, attempt = jobs.attempt + 1,
        started_at = @now, updated_at = @now
    -- An array, not a join, as in ClaimLimitedJobs.
    WHERE jobs.seq = ANY(ARRAY(SELECT picked.seq FROM picked)) AND jobs.status = 'queued'
    RETURNING jobs.seq, jobs.id, jobs.kind, jobs.payload, jobs.attempt, jobs.max_attempts,
        jobs.timeout, jobs.priority, jobs.traceparent, jobs.partition_key, jobs.workflow_id
),
started AS (
    INSERT INTO queue_starts (queue, partition_key, started_at)
    SELECT @queue, claimed.partition_key, statement_timestamp() FROM claimed
    WHERE sqlc.narg(rate_limit)::integer IS NOT NULL
),
forgotten AS (
    DELETE FROM queue_starts
    WHERE queue = @queue AND started_at
        <= statement_timestamp() - make_interval(secs => sqlc.narg(rate_period)::float8)
)
SELECT seq, id, kind, payload, attempt, max_attempts, timeout, priority, traceparent,
    partition_key, workflow_id
FROM claimed;

-- name: NextRateOpening :one
-- NextRateOpening returns the seconds, by the server's clock, until the rate
-- window of queue (rate_period seconds) admits another start: until the
-- oldest start it still counts leaves it. No row when it counts none. A
-- runner whose claim the rate held back sleeps until then, not until its
-- poll. With a rate per key the oldest start may be another key's: the
-- runner then looks again, finds the next opening, and sleeps again.
SELECT EXTRACT(EPOCH FROM start.started_at + make_interval(secs => @rate_period::float8)
        - statement_timestamp())::float8 AS seconds
FROM queue_starts AS start
WHERE start.queue = @queue
    AND start.started_at > statement_timestamp() - make_interval(secs => @rate_period::float8)
ORDER BY start.started_at LIMIT 1;

-- name: DeclareQueue :exec
-- DeclareQueue records the limits a runner's code declares for queue. They
-- become the queue's limits unless an operator set limits (overridden),
-- which are kept until ClearQueueLimits. A pause is never declared: it is
-- the operator's, and kept.
--
-- It writes nothing when the row holds these limits already, as after a
-- restart, and then does not lock the row either, which differs from SQLite
-- by necessity: the upsert would wait for the lock a limited claim holds,
-- so a runner starting beside one stopped inside its claim would wait in
-- start() until the server ends that claim. The check reads the row without
-- a lock: a declaration it skips is one that another committed meanwhile
-- would have overwritten all the same.
INSERT INTO queues (
    name, concurrency, partition_limit, rate_limit, rate_period, rate_per_key,
    declared_concurrency, declared_partition_limit, declared_rate_limit,
    declared_rate_period, declared_rate_per_key, updated_at
)
SELECT @name::text, sqlc.narg(concurrency)::integer, sqlc.narg(partition_limit)::integer,
    sqlc.narg(rate_limit)::integer, sqlc.narg(rate_period)::float8, @rate_per_key::boolean,
    sqlc.narg(concurrency)::integer, sqlc.narg(partition_limit)::integer,
    sqlc.narg(rate_limit)::integer, sqlc.narg(rate_period)::float8, @rate_per_key::boolean,
    @now::timestamptz
WHERE NOT EXISTS (
    SELECT 1 FROM queues AS held
    WHERE held.name = @name::text
        AND held.declared_concurrency IS NOT DISTINCT FROM sqlc.narg(concurrency)::integer
        AND held.declared_partition_limit IS NOT DISTINCT FROM sqlc.narg(partition_limit)::integer
        AND held.declared_rate_limit IS NOT DISTINCT FROM sqlc.narg(rate_limit)::integer
        AND held.declared_rate_period IS NOT DISTINCT FROM sqlc.narg(rate_period)::float8
        AND held.declared_rate_per_key = @rate_per_key::boolean
        AND (held.overridden OR (
            held.concurrency IS NOT DISTINCT FROM held.declared_concurrency
            AND held.partition_limit IS NOT DISTINCT FROM held.declared_partition_limit
            AND held.rate_limit IS NOT DISTINCT FROM held.declared_rate_limit
            AND held.rate_period IS NOT DISTINCT FROM held.declared_rate_period
            AND held.rate_per_key = held.declared_rate_per_key
        ))
)
ON CONFLICT (name) DO UPDATE SET
    declared_concurrency = excluded.declared_concurrency,
    declared_partition_limit = excluded.declared_partition_limit,
    declared_rate_limit = excluded.declared_rate_limit,
    declared_rate_period = excluded.declared_rate_period,
    declared_rate_per_key = excluded.declared_rate_per_key,
    concurrency = CASE WHEN queues.overridden THEN queues.concurrency ELSE excluded.concurrency END,
    partition_limit = CASE WHEN queues.overridden THEN queues.partition_limit ELSE excluded.partition_limit END,
    rate_limit = CASE WHEN queues.overridden THEN queues.rate_limit ELSE excluded.rate_limit END,
    rate_period = CASE WHEN queues.overridden THEN queues.rate_period ELSE excluded.rate_period END,
    rate_per_key = CASE WHEN queues.overridden THEN queues.rate_per_key ELSE excluded.rate_per_key END,
    updated_at = excluded.updated_at;

-- name: SetQueueLimits :exec
-- SetQueueLimits sets the limits of queue as an operator: they are kept,
-- whatever runners declare, until ClearQueueLimits.
INSERT INTO queues (
    name, concurrency, partition_limit, rate_limit, rate_period, rate_per_key, overridden, updated_at
)
VALUES (
    @name, sqlc.narg(concurrency), sqlc.narg(partition_limit), sqlc.narg(rate_limit),
    sqlc.narg(rate_period), @rate_per_key, true, @now
)
ON CONFLICT (name) DO UPDATE SET
    concurrency = excluded.concurrency, partition_limit = excluded.partition_limit,
    rate_limit = excluded.rate_limit, rate_period = excluded.rate_period,
    rate_per_key = excluded.rate_per_key, overridden = true, updated_at = excluded.updated_at;

-- name: ClearQueueLimits :execrows
-- ClearQueueLimits drops an operator's limits of queue: the limits the code
-- declared last apply again.
UPDATE queues
SET concurrency = declared_concurrency, partition_limit = declared_partition_limit,
    rate_limit = declared_rate_limit, rate_period = declared_rate_period,
    rate_per_key = declared_rate_per_key, overridden = false, updated_at = @now
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
WHERE name = @name AND paused = false AND overridden = false
    AND declared_concurrency IS NULL AND declared_partition_limit IS NULL
    AND declared_rate_limit IS NULL;

-- name: ListQueues :many
-- ListQueues reads every queue that has a row in queues or jobs that wait or
-- run, with its flow control (null for a queue without a row) and how many
-- of its jobs are queued and running.
SELECT names.name AS name,
    coalesce(flow.paused, false) AS paused,
    flow.concurrency, flow.partition_limit, flow.rate_limit, flow.rate_period,
    coalesce(flow.rate_per_key, false) AS rate_per_key,
    coalesce(flow.overridden, false) AS overridden,
    (SELECT count(*) FROM jobs AS waiting
        WHERE waiting.status = 'queued' AND waiting.queue = names.name) AS queued,
    (SELECT count(*) FROM jobs AS busy
        WHERE busy.status = 'running' AND busy.queue = names.name) AS running
FROM (
    SELECT queues.name FROM queues
    UNION SELECT DISTINCT jobs.queue FROM jobs WHERE jobs.status = 'queued' OR jobs.status = 'running'
) AS names
LEFT JOIN queues AS flow ON flow.name = names.name
ORDER BY names.name;

-- name: GetWaitFacts :one
-- GetWaitFacts reads what may hold back the queued job id: its queue's flow
-- control, the counts its limits compare with (starts within the rate
-- period, on the server's clock), and whether an earlier job of its sequence
-- holds it back. The caller decides which reason to show.
SELECT
    coalesce(flow.paused, false) AS paused,
    flow.concurrency, flow.partition_limit, flow.rate_limit,
    coalesce(flow.rate_per_key, false) AS rate_per_key,
    (SELECT count(*) FROM jobs AS busy
        WHERE busy.status = 'running' AND busy.queue = job.queue) AS running,
    (SELECT count(*) FROM jobs AS busy
        WHERE busy.status = 'running' AND busy.queue = job.queue
            AND busy.partition_key IS NOT DISTINCT FROM job.partition_key) AS running_in_key,
    (SELECT count(*) FROM queue_starts AS start
        WHERE start.queue = job.queue AND start.started_at
            > statement_timestamp() - make_interval(secs => coalesce(flow.rate_period, 0))) AS starts,
    (SELECT count(*) FROM queue_starts AS start
        WHERE start.queue = job.queue AND start.started_at
            > statement_timestamp() - make_interval(secs => coalesce(flow.rate_period, 0))
            AND start.partition_key IS NOT DISTINCT FROM job.partition_key) AS starts_in_key,
    EXISTS (
        SELECT 1 FROM jobs AS prior
        WHERE job.sequence_key IS NOT NULL AND prior.sequence_key = job.sequence_key
            AND prior.seq < job.seq AND prior.status <> 'succeeded'
            AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks)
    ) AS behind_sequence
FROM jobs AS job
LEFT JOIN queues AS flow ON flow.name = job.queue
WHERE job.id = @id AND job.status = 'queued';
