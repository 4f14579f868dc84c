-- name: CreateJob :exec
-- CreateJob stores a queued job that may be claimed from run_at on. Its insert
-- trigger notifies idle runners in every process when the transaction commits.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at::timestamptz > @now::timestamptz,
    @now, @now, sqlc.narg(traceparent), sqlc.narg(partition_key), sqlc.narg(sequence_key),
    @sequence_blocks, @tags, sqlc.narg(meta)
);

-- name: CreateJobs :exec
-- CreateJobs stores queued jobs, as CreateJob does one, in one statement:
-- jobs is a JSON array of one object a job, holding CreateJob's parameters
-- under the names below (times as text with a zone), and the jobs take
-- their seq in the array's order. The jobs may be of several kinds and
-- enqueued at several moments, so that concurrent enqueues can share the
-- statement. One statement is one round trip and, without BEGIN, its own
-- transaction; its insert trigger fires once. One JSON parameter costs the
-- client a third of what an array a column does (psycopg builds arrays
-- element by element in Python). Differs from SQLite, whose engine has no
-- round trip to save: there CreateJobs sends a statement per row.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta
)
SELECT job.id, job.kind, job.queue, job.priority, job.payload, job.max_attempts, job.timeout,
    job.run_at, job.run_at > job.now, job.now, job.now, job.traceparent, job.partition_key,
    job.sequence_key, coalesce(job.sequence_blocks, false), coalesce(job.tags, '[]'), job.meta
FROM jsonb_to_recordset(@jobs::jsonb) AS job(
    id text, kind text, queue text, priority integer, payload text, max_attempts integer,
    timeout double precision, run_at timestamptz, now timestamptz, traceparent text,
    partition_key text, sequence_key text, sequence_blocks boolean, tags text, meta text
);

-- name: CreateUniqueJob :execrows
-- CreateUniqueJob stores a queued job with a unique key, or nothing when a
-- job of its kind holds the key (jobs_unique): it changes 1 row, or 0 on a
-- collision (no RETURNING: SQLite's costs as much as the insert). The
-- database decides, so concurrent enqueues of one key store exactly one
-- job; the caller then reads the holder.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, unique_key, unique_statuses, partition_key,
    sequence_key, sequence_blocks, tags, meta
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at::timestamptz > @now::timestamptz,
    @now, @now, sqlc.narg(traceparent), @unique_key, @unique_statuses, sqlc.narg(partition_key),
    sqlc.narg(sequence_key), @sequence_blocks, @tags, sqlc.narg(meta)
)
ON CONFLICT DO NOTHING;

-- name: CreateUniqueJobs :batchone
-- CreateUniqueJobs is CreateUniqueJob for several jobs, sent at once: the
-- statements run in order, so a job whose key an earlier one of the batch
-- took inserts nothing. Differs by necessity from SQLite, which has no
-- pipeline to save round trips with: there the engine loops over
-- CreateUniqueJob.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, unique_key, unique_statuses, partition_key,
    sequence_key, sequence_blocks, tags, meta
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at::timestamptz > @now::timestamptz,
    @now, @now, sqlc.narg(traceparent), @unique_key, @unique_statuses, sqlc.narg(partition_key),
    sqlc.narg(sequence_key), @sequence_blocks, @tags, sqlc.narg(meta)
)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: GetUniqueHolder :one
-- GetUniqueHolder reads the job of kind that holds unique_key, if one does:
-- its condition is jobs_unique's, so it reads that index.
SELECT id FROM jobs
WHERE kind = @kind AND unique_key = @unique_key AND unique_key IS NOT NULL
    AND (unique_statuses & CASE status
        WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
        WHEN 'failed' THEN 8 ELSE 16 END) <> 0;

-- name: FinishAndClaimJobs :many
-- FinishAndClaimJobs stores the outcomes of finished attempts and claims up
-- to max_jobs ready jobs of queue for runner, in one statement: on a server
-- each statement costs a round trip and each transaction a flush to disk,
-- and a runner's workers free their slots as they finish, so both go together.
--
-- Attempt i of the arrays (ids[i], claimed as attempts[i]) ends as states[i]
-- says, only while the job is running under that claim, as SucceedJob,
-- FailJob, RetryJob, SnoozeJob and CancelRunningJob do one at a time:
-- 'succeeded' stores results[i]; 'failed' stores errors[i] as the job's error;
-- 'queued' puts the job back in its queue from run_ats[i] on (cancelled
-- instead when its cancel was requested), with errors[i] null for a retry the
-- handler asked for, which adds one to max_attempts; 'cancelled' cancels it.
-- A non-null errors[i] joins the job's history. An attempt that ends the job
-- stores run_traces[i], its run span's trace context (run_traces null: none,
-- as an uninstrumented store sends). Such a job comes back as a row
-- with finished true and only its id; a job missing from those rows is no
-- longer running under its claim.
--
-- The claim marks ready jobs of queue (not scheduled: see StageJobs) running,
-- lowest priority and then oldest first, and returns them with finished false and their new attempt.
-- It is the claim of a queue without flow control: it claims nothing while
-- the queue's row in queues is paused or has a limit (the runner then claims
-- with LockQueueFlow and ClaimLimitedJobs or ClaimPartitionedJobs), which
-- costs one primary key lookup per claim. A job of a sequence is skipped
-- while an earlier one of its sequence holds it back (see jobs_sequence);
-- no lock is needed for that: the earlier job's row decides, and a claim
-- that skips a locked head finds it queued in its snapshot, so it never
-- takes the job behind it.
-- The pick starts after (after_priority, after_seq): a runner passes where
-- its last claim of the queue stopped, and the index scan begins there
-- instead of at the queue's head. While a transaction holds back the xmin
-- (a long transaction, a repeatable-read reader), the rows claimed meanwhile
-- keep dead entries at the head of jobs_queued that vacuum cannot remove,
-- and a claim from the head would visit each of them in the heap. A runner
-- passes the head (the lowest integer, 0) at least once a second and after
-- anything that may have made a job ready behind its place (ClaimCursors).
-- RETURNING does not keep the pick's order: callers sort by (priority, seq).
-- Differs from SQLite, whose single writer serializes claims: here claims
-- run concurrently, so the picked rows are locked and rows another claim has
-- locked are skipped; no job is claimed twice and claims do not queue behind
-- each other. The pick is a MATERIALIZED CTE because a subquery in the WHERE
-- clause may be run more than once by the planner, and with SKIP LOCKED each
-- run can pick other rows: one claim could then take more than max_jobs. The
-- finished jobs are running and the picked ones queued, so the two updates
-- never touch the same row.
-- JobsEnded: when jobs end (succeeded, failed or cancelled) the statement
-- notifies 'jobtable-ended:' || md5(current_schema()), delivered at its
-- commit, with their ids one a line ('' when they would not fit a payload:
-- a listener then checks every job it waits for), so that processes waiting
-- for those jobs' results wake at once; a batch that ends none sends none.
-- It notifies only while some process waits: a notifying commit holds
-- PostgreSQL's notify lock through its flush, so notifying commits do not
-- share a flush. A waiting process holds ListenForEndedJobs' 16 shared
-- advisory locks; this statement tries its bucket's lock exclusively, which
-- fails while a waiter holds it (or another finish statement of the bucket
-- does: one needless notification). A waiter that comes meanwhile waits for
-- this commit before it listens and checks its jobs, so none is missed.
-- JobsReleased: the statement also notifies the runners' channel
-- (jobtable_channel), delivered at its commit, with 'ready:' and the name of
-- each queue where a job it finished may release a held one: the queue of
-- the next queued job of an ended job's sequence, and the queue of any
-- finished job when that queue has a concurrency or partition limit (a slot
-- is free). Only the runners serving that queue look again, at once rather
-- than at their poll; the runner that finished the job too, since this
-- statement's own pick cannot see what it releases. A job of neither kind
-- costs one primary key lookup in queues and sends nothing, so an unlimited
-- queue's commits still share a flush.
-- The ended and released CTEs are MATERIALIZED and joined, so that each runs
-- exactly once; each yields one row at most.
WITH finished AS (
    UPDATE jobs
    SET status = CASE WHEN outcome.state = 'queued' AND jobs.cancel_requested THEN 'cancelled'
            ELSE outcome.state END,
        result = CASE WHEN outcome.state = 'succeeded' THEN outcome.result ELSE jobs.result END,
        error = CASE WHEN outcome.state = 'failed' THEN outcome.error END,
        errors = CASE WHEN outcome.error IS NULL THEN jobs.errors
            ELSE (jobs.errors::jsonb || jsonb_build_array(jsonb_build_object(
                'attempt', jobs.attempt, 'error', outcome.error, 'at', @now::timestamptz
            )))::text
        END,
        max_attempts = CASE WHEN outcome.state = 'queued' AND outcome.error IS NULL
            THEN jobs.max_attempts + 1 ELSE jobs.max_attempts END,
        run_at = COALESCE(outcome.run_at, jobs.run_at),
        scheduled = COALESCE(outcome.run_at > @now, false),
        runner = CASE WHEN outcome.state = 'queued' THEN NULL ELSE jobs.runner END,
        finished_at = CASE WHEN outcome.state = 'queued' AND NOT jobs.cancel_requested
            THEN NULL ELSE @now END,
        updated_at = @now,
        run_trace = CASE WHEN outcome.state = 'queued' THEN jobs.run_trace
            ELSE outcome.run_trace END
    FROM (
        -- Set-returning functions in one select list run in step: row i
        -- holds element i of every array.
        SELECT unnest(@ids::text[]) AS id,
            unnest(@attempts::integer[]) AS attempt,
            unnest(@states::text[]) AS state,
            unnest(sqlc.narg(results)::text[]) AS result,
            unnest(sqlc.narg(errors)::text[]) AS error,
            unnest(sqlc.narg(run_ats)::timestamptz[]) AS run_at,
            unnest(sqlc.narg(run_traces)::text[]) AS run_trace,
            -- The status an outcome's job must have, as a column: a constant
            -- would let the planner read every running row from jobs_running
            -- and match each to the outcomes, which it picks when the
            -- statistics saw few running rows, though a claim of one job then
            -- reads every running job (BENCHMARKS.md); this way each job is
            -- read by its id.
            'running'::text AS running
    ) AS outcome
    WHERE jobs.id = outcome.id AND jobs.status = outcome.running
        AND jobs.attempt = outcome.attempt
    RETURNING jobs.id, jobs.status, jobs.queue, jobs.sequence_key
),
ended AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
        WHEN sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\n') ELSE '' END)
    FROM finished WHERE status <> 'queued'
    HAVING count(*) > 0 AND NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16)
),
released AS MATERIALIZED (
    SELECT count(pg_notify(jobtable_channel(current_schema()), CASE
        WHEN octet_length(freed.queue) < 7900 THEN 'ready:' || freed.queue ELSE '' END))
    FROM (
        SELECT next.queue FROM finished AS ended CROSS JOIN LATERAL (
            SELECT later.queue FROM jobs AS later
            WHERE later.sequence_key = ended.sequence_key AND later.sequence_key IS NOT NULL
                AND later.status <> 'succeeded' AND later.status = 'queued'
            ORDER BY later.seq LIMIT 1
        ) AS next
        WHERE ended.sequence_key IS NOT NULL AND ended.status <> 'queued'
        UNION
        SELECT ended.queue FROM finished AS ended
        WHERE EXISTS (
            SELECT 1 FROM queues AS flow
            WHERE flow.name = ended.queue
                AND (flow.concurrency IS NOT NULL OR flow.partition_limit IS NOT NULL)
        )
    ) AS freed
),
picked AS MATERIALIZED (
    SELECT ready.seq FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = false AND ready.queue = @queue
        AND NOT EXISTS (
            SELECT 1 FROM queues AS flow
            WHERE flow.name = @queue AND (flow.paused OR flow.concurrency IS NOT NULL
                OR flow.partition_limit IS NOT NULL OR flow.rate_limit IS NOT NULL)
        )
        AND (ready.sequence_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs AS prior
            WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks)
        ))
        AND (ready.priority, ready.seq) > (@after_priority::integer, @after_seq::bigint)
    ORDER BY ready.priority, ready.seq LIMIT @max_jobs
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE jobs
    SET status = 'running', runner = @runner, attempt = jobs.attempt + 1,
        started_at = @now, updated_at = @now
    FROM picked
    WHERE jobs.seq = picked.seq
    RETURNING jobs.seq, jobs.id, jobs.kind, jobs.payload, jobs.attempt, jobs.max_attempts,
        jobs.timeout, jobs.priority, jobs.traceparent, jobs.partition_key, jobs.workflow_id
)
SELECT false AS finished, seq, id, kind, payload, attempt, max_attempts, timeout, priority,
    traceparent, partition_key, workflow_id
FROM claimed
UNION ALL
SELECT true, 0::bigint, id, '', '', 0, 0, NULL::double precision, 0, NULL::text, NULL::text,
    NULL::text
FROM finished LEFT JOIN ended ON true LEFT JOIN released ON true;

-- name: FinishAndClaimJobsOfKinds :many
-- FinishAndClaimJobsOfKinds is FinishAndClaimJobs for a runner that claims
-- only the kinds it has handlers for, whose names kinds holds: the same
-- statement but for that one condition of the pick, kept apart so that the
-- plain claim pays nothing for it (tests check the two stay the same).
WITH finished AS (
    UPDATE jobs
    SET status = CASE WHEN outcome.state = 'queued' AND jobs.cancel_requested THEN 'cancelled'
            ELSE outcome.state END,
        result = CASE WHEN outcome.state = 'succeeded' THEN outcome.result ELSE jobs.result END,
        error = CASE WHEN outcome.state = 'failed' THEN outcome.error END,
        errors = CASE WHEN outcome.error IS NULL THEN jobs.errors
            ELSE (jobs.errors::jsonb || jsonb_build_array(jsonb_build_object(
                'attempt', jobs.attempt, 'error', outcome.error, 'at', @now::timestamptz
            )))::text
        END,
        max_attempts = CASE WHEN outcome.state = 'queued' AND outcome.error IS NULL
            THEN jobs.max_attempts + 1 ELSE jobs.max_attempts END,
        run_at = COALESCE(outcome.run_at, jobs.run_at),
        scheduled = COALESCE(outcome.run_at > @now, false),
        runner = CASE WHEN outcome.state = 'queued' THEN NULL ELSE jobs.runner END,
        finished_at = CASE WHEN outcome.state = 'queued' AND NOT jobs.cancel_requested
            THEN NULL ELSE @now END,
        updated_at = @now,
        run_trace = CASE WHEN outcome.state = 'queued' THEN jobs.run_trace
            ELSE outcome.run_trace END
    FROM (
        -- Set-returning functions in one select list run in step: row i
        -- holds element i of every array.
        SELECT unnest(@ids::text[]) AS id,
            unnest(@attempts::integer[]) AS attempt,
            unnest(@states::text[]) AS state,
            unnest(sqlc.narg(results)::text[]) AS result,
            unnest(sqlc.narg(errors)::text[]) AS error,
            unnest(sqlc.narg(run_ats)::timestamptz[]) AS run_at,
            unnest(sqlc.narg(run_traces)::text[]) AS run_trace,
            -- The status an outcome's job must have, as a column: a constant
            -- would let the planner read every running row from jobs_running
            -- and match each to the outcomes, which it picks when the
            -- statistics saw few running rows, though a claim of one job then
            -- reads every running job (BENCHMARKS.md); this way each job is
            -- read by its id.
            'running'::text AS running
    ) AS outcome
    WHERE jobs.id = outcome.id AND jobs.status = outcome.running
        AND jobs.attempt = outcome.attempt
    RETURNING jobs.id, jobs.status, jobs.queue, jobs.sequence_key
),
ended AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
        WHEN sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\n') ELSE '' END)
    FROM finished WHERE status <> 'queued'
    HAVING count(*) > 0 AND NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16)
),
released AS MATERIALIZED (
    SELECT count(pg_notify(jobtable_channel(current_schema()), CASE
        WHEN octet_length(freed.queue) < 7900 THEN 'ready:' || freed.queue ELSE '' END))
    FROM (
        SELECT next.queue FROM finished AS ended CROSS JOIN LATERAL (
            SELECT later.queue FROM jobs AS later
            WHERE later.sequence_key = ended.sequence_key AND later.sequence_key IS NOT NULL
                AND later.status <> 'succeeded' AND later.status = 'queued'
            ORDER BY later.seq LIMIT 1
        ) AS next
        WHERE ended.sequence_key IS NOT NULL AND ended.status <> 'queued'
        UNION
        SELECT ended.queue FROM finished AS ended
        WHERE EXISTS (
            SELECT 1 FROM queues AS flow
            WHERE flow.name = ended.queue
                AND (flow.concurrency IS NOT NULL OR flow.partition_limit IS NOT NULL)
        )
    ) AS freed
),
picked AS MATERIALIZED (
    SELECT ready.seq FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = false AND ready.queue = @queue
        AND ready.kind = ANY(@kinds::text[])
        AND NOT EXISTS (
            SELECT 1 FROM queues AS flow
            WHERE flow.name = @queue AND (flow.paused OR flow.concurrency IS NOT NULL
                OR flow.partition_limit IS NOT NULL OR flow.rate_limit IS NOT NULL)
        )
        AND (ready.sequence_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs AS prior
            WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks)
        ))
        AND (ready.priority, ready.seq) > (@after_priority::integer, @after_seq::bigint)
    ORDER BY ready.priority, ready.seq LIMIT @max_jobs
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE jobs
    SET status = 'running', runner = @runner, attempt = jobs.attempt + 1,
        started_at = @now, updated_at = @now
    FROM picked
    WHERE jobs.seq = picked.seq
    RETURNING jobs.seq, jobs.id, jobs.kind, jobs.payload, jobs.attempt, jobs.max_attempts,
        jobs.timeout, jobs.priority, jobs.traceparent, jobs.partition_key, jobs.workflow_id
)
SELECT false AS finished, seq, id, kind, payload, attempt, max_attempts, timeout, priority,
    traceparent, partition_key, workflow_id
FROM claimed
UNION ALL
SELECT true, 0::bigint, id, '', '', 0, 0, NULL::double precision, 0, NULL::text, NULL::text,
    NULL::text
FROM finished LEFT JOIN ended ON true LEFT JOIN released ON true;

-- name: NextRunAt :one
-- NextRunAt returns the earliest run_at among the scheduled jobs of queue:
-- an idle runner sleeps until then at most.
SELECT run_at FROM jobs WHERE status = 'queued' AND scheduled = true AND queue = @queue
ORDER BY run_at LIMIT 1;

-- name: StageJobs :execrows
-- StageJobs makes the scheduled jobs of queue whose run_at has come ready to
-- be claimed.
UPDATE jobs SET scheduled = false
WHERE status = 'queued' AND scheduled = true AND queue = @queue AND run_at <= @now;

-- name: ReadyRetries :execrows
-- ReadyRetries makes the queued jobs of queue that wait for another attempt
-- (claimed before, their run_at not come yet) ready to be claimed now, their
-- run_at left as it was: jobtable.testing's drain runs retries without
-- waiting for their backoff. A job that sleeps or waits for a signal (its
-- wait in job_waits recorded by its last change) is left as it is.
UPDATE jobs SET scheduled = false
WHERE status = 'queued' AND scheduled = true AND queue = @queue AND attempt > 0
    AND NOT EXISTS (
        SELECT 1 FROM job_waits
        WHERE job_waits.job_id = jobs.id AND job_waits.since = jobs.updated_at
    );

-- name: PublishJobResult :execrows
-- PublishJobResult stores a partial result while the claim of attempt holds,
-- and counts it (published), so that a stream never yields one twice. It
-- notifies the job's id on the channel of ended jobs (JobsEnded), delivered
-- at commit, and as FinishAndClaimJobs only while some process waits, so
-- that a stream of the job's progress wakes at once; a waiter for the job's
-- end reads it and finds it still running. Differs by necessity from SQLite,
-- which has no NOTIFY: its streams watch the file.
WITH published AS (
    UPDATE jobs SET result = @result, updated_at = @now, published = published + 1
    WHERE id = @id AND status = 'running' AND attempt = @attempt
    RETURNING id
),
notified AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()),
        CASE WHEN octet_length(id) < 7900 THEN id ELSE '' END)
    FROM published
    WHERE NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16)
)
-- Joined, not left joined: the planner drops a left join whose columns go
-- unused, and the notification with it.
SELECT published.id FROM published CROSS JOIN (SELECT count(*) AS sent FROM notified) AS n;

-- name: SucceedJob :execrows
-- SucceedJob stores the final result while the claim of attempt holds, and
-- run_trace, the trace context of the attempt's run span (null: none).
UPDATE jobs
SET status = 'succeeded', result = @result, finished_at = @now, updated_at = @now,
    run_trace = @run_trace
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: FailJob :execrows
-- FailJob stores error as the job's error, and in its history, while the
-- claim of attempt holds; run_trace as SucceedJob.
UPDATE jobs
SET status = 'failed', error = @error,
    errors = (errors::jsonb || jsonb_build_array(jsonb_build_object('attempt', attempt, 'error', @error::text, 'at', @now::timestamptz)))::text,
    finished_at = @now, updated_at = @now, run_trace = @run_trace
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: RetryJob :execrows
-- RetryJob puts the job back in its queue from run_at on, with error in its
-- history, while the claim of attempt holds; a job whose cancel was
-- requested is cancelled instead.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
    errors = (errors::jsonb || jsonb_build_array(jsonb_build_object('attempt', attempt, 'error', @error::text, 'at', @now::timestamptz)))::text,
    run_at = @run_at, scheduled = @run_at::timestamptz > @now::timestamptz, runner = NULL,
    finished_at = CASE WHEN cancel_requested THEN @now END,
    updated_at = @now
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: SnoozeJob :execrows
-- SnoozeJob puts the job back in its queue from run_at on, as its handler
-- asked, while the claim of attempt holds; a job whose cancel was requested
-- is cancelled instead. max_attempts grows by one, so the request uses none
-- of the job's attempts while attempt keeps counting claims and fencing.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
    max_attempts = max_attempts + 1,
    run_at = @run_at, scheduled = @run_at::timestamptz > @now::timestamptz, runner = NULL,
    finished_at = CASE WHEN cancel_requested THEN @now END,
    updated_at = @now
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: CancelRunningJob :execrows
-- CancelRunningJob ends the job cancelled while the claim of attempt holds;
-- run_trace as SucceedJob.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now, run_trace = @run_trace
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: InterruptRunningJobs :execrows
-- InterruptRunningJobs ends the attempt of every running job of the runner
-- named runner, which an earlier process of that name left running: each goes
-- back to its queue while attempts remain, and fails with error after its
-- last (a job whose cancel was requested is cancelled). error joins its history.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled'
        WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END,
    error = CASE WHEN cancel_requested OR attempt < max_attempts THEN NULL ELSE @error END,
    errors = (errors::jsonb || jsonb_build_array(jsonb_build_object('attempt', attempt, 'error', @error::text, 'at', @now::timestamptz)))::text,
    run_at = @now, scheduled = false,
    runner = CASE WHEN attempt < max_attempts THEN NULL ELSE runner END,
    finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN @now END,
    updated_at = @now
WHERE status = 'running' AND runner = @runner;

-- name: InterruptJobsOfDeadRunners :execrows
-- InterruptJobsOfDeadRunners ends, as InterruptRunningJobs does, the attempt
-- of the running jobs of every runner whose heartbeat is older than
-- lease_seconds, or that no longer has a row; never those of runner, the
-- runner that asks, which is alive. Differs from SQLite: heartbeats are the
-- server's time, so runners on machines with skewed clocks agree; and it skips
-- rows another transaction holds (their runner is finishing them, or another
-- runner's maintenance ends them), so two runners' maintenance never deadlock.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled'
        WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END,
    error = CASE WHEN cancel_requested OR attempt < max_attempts THEN NULL ELSE @error END,
    errors = (errors::jsonb || jsonb_build_array(jsonb_build_object('attempt', attempt, 'error', @error::text, 'at', @now::timestamptz)))::text,
    run_at = @now, scheduled = false,
    runner = CASE WHEN attempt < max_attempts THEN NULL ELSE runner END,
    finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN @now END,
    updated_at = @now
WHERE seq IN (
    SELECT stale.seq FROM jobs AS stale
    WHERE stale.status = 'running'
        AND (stale.runner IS NULL OR (stale.runner <> @runner AND stale.runner NOT IN (
            SELECT name FROM runners
            WHERE heartbeat_at >= now() - make_interval(secs => @lease_seconds)
        )))
    FOR UPDATE OF stale SKIP LOCKED
);

-- name: InterruptJob :execrows
-- InterruptJob ends, as InterruptRunningJobs does, the attempt of one job
-- while the claim of attempt holds.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled'
        WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END,
    error = CASE WHEN cancel_requested OR attempt < max_attempts THEN NULL ELSE @error END,
    errors = (errors::jsonb || jsonb_build_array(jsonb_build_object('attempt', attempt, 'error', @error::text, 'at', @now::timestamptz)))::text,
    run_at = @now, scheduled = false,
    runner = CASE WHEN attempt < max_attempts THEN NULL ELSE runner END,
    finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN @now END,
    updated_at = @now
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: ListRunningJobs :many
-- ListRunningJobs lists the jobs running under runner that have not changed
-- since before: a live runner compares them with the jobs it holds, to find a
-- claim whose reply it never received.
SELECT id, attempt FROM jobs
WHERE status = 'running' AND runner = @runner AND updated_at < @before;

-- name: ListCancelRequests :many
-- ListCancelRequests lists the jobs running under runner whose cancel was
-- requested.
SELECT id, attempt FROM jobs
WHERE status = 'running' AND runner = @runner AND cancel_requested;

-- name: LockJob :one
-- LockJob reads the status of a job, for a write that acts on it (a cancel,
-- a retry, a delete), and locks its row until the transaction ends. Under
-- READ COMMITTED every statement takes a snapshot of its own, so without the
-- lock a write of several statements can see the job in one state and act on
-- another: a cancel saw it running, a snooze put it back in its queue, and
-- the cancel's next statement saw it queued, so neither matched. FOR UPDATE
-- waits for a transaction that is writing the row and returns the row as
-- that one left it; every other write of the job (a claim, an outcome,
-- another operator's action) then waits for this transaction, and claims
-- skip the row, so the statements after it find the job as it read.
-- Differs by necessity from SQLite, which has no row locks.
SELECT status FROM jobs WHERE id = @id FOR UPDATE;

-- name: CancelQueuedJob :execrows
-- CancelQueuedJob cancels a job that is still queued, or pending (a job of
-- a workflow waiting for its dependencies), and notifies its end as
-- FinishAndClaimJobs does (JobsEnded), so a process waiting for it wakes.
-- Differs by necessity from SQLite, which has no NOTIFY: its waiters watch the file.
WITH cancelled AS (
    UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
    WHERE id = @id AND (status = 'queued' OR status = 'pending')
    RETURNING id
)
SELECT pg_notify('jobtable-ended:' || md5(current_schema()),
    CASE WHEN octet_length(id) < 7900 THEN id ELSE '' END)
FROM cancelled;

-- name: RequestCancel :execrows
-- RequestCancel asks the runner holding a running job to cancel it.
UPDATE jobs SET cancel_requested = true, updated_at = @now
WHERE id = @id AND status = 'running';

-- name: NotifyCancel :exec
-- NotifyCancel tells the runners listening on this schema's channel, when
-- the transaction commits, that a running job's cancel was requested, so the
-- runner holding it reads its requests at once instead of at its next poll.
-- Its payload, 'cancel', sets it apart from an enqueue's (''). Differs by
-- necessity from SQLite, which has no NOTIFY: runners there poll.
SELECT pg_notify(jobtable_channel(current_schema()), 'cancel');

-- name: NotifyJobsEnded :exec
-- NotifyJobsEnded notifies the end of the jobs of ids at commit, as
-- FinishAndClaimJobs does (JobsEnded), for the writes that end jobs in other
-- statements: interrupts, bulk cancels, a workflow's cancel, deletes. Empty
-- ids (the write knows that jobs ended, not which) or ids too long for a
-- payload send '': a listener then checks every job it waits for. One
-- notification a statement however many jobs ended, and, as
-- FinishAndClaimJobs, only while some process waits. Differs by necessity
-- from SQLite, which has no NOTIFY: its waiters watch the file.
SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
    WHEN count(id) > 0 AND sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\n')
    ELSE '' END)
FROM unnest(@ids::text[]) AS id
HAVING NOT pg_try_advisory_xact_lock(
    hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16);

-- name: DebounceJob :one
-- DebounceJob updates the job of kind that holds debounce_key while it waits
-- for its first claim (jobs_debounce), if one does: its payload becomes
-- payload when replace is set (else it keeps its own), and its run_at becomes
-- run_at, the end of the new quiet period. Its other columns stay as stored.
-- It returns the job's id, or no row when no job holds the key.
UPDATE jobs
SET payload = CASE WHEN CAST(@replace AS BOOLEAN) THEN CAST(@payload AS text) ELSE payload END,
    run_at = @run_at, scheduled = @run_at::timestamptz > @now::timestamptz, updated_at = @now
WHERE kind = @kind AND debounce_key = @debounce_key AND debounce_key IS NOT NULL
    AND status = 'queued' AND attempt = 0
RETURNING id;

-- name: CreateDebouncedJob :execrows
-- CreateDebouncedJob stores a queued job that holds debounce_key until its
-- first claim, or nothing when a job of its kind holds the key (jobs_debounce):
-- it changes 1 row, or 0 when another enqueue stored the key's job first; the
-- caller then updates that one (DebounceJob).
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta, debounce_key
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at::timestamptz > @now::timestamptz,
    @now, @now, sqlc.narg(traceparent), sqlc.narg(partition_key), sqlc.narg(sequence_key),
    @sequence_blocks, @tags, sqlc.narg(meta), @debounce_key
)
ON CONFLICT DO NOTHING;

-- name: GetJobProgress :one
-- GetJobProgress reads what a stream of the job's progress yields: its
-- status, its latest partial result (or final result) with the count of
-- partial results published, and its error.
SELECT id, kind, status, result, error, published FROM jobs WHERE id = @id;

-- name: GetJob :one
SELECT id, kind, status, result, error FROM jobs WHERE id = @id;

-- name: GetJobs :many
-- GetJobs reads the jobs with ids, in any order, for the processes waiting
-- for their results: one query checks every job a process waits for. An id
-- no job has returns no row.
SELECT id, kind, status, result, error FROM jobs WHERE id = ANY(@ids::text[]);

-- name: GetJobLabels :one
-- GetJobLabels reads the tags and metadata of one job, for its handler.
SELECT tags, meta FROM jobs WHERE id = @id;

-- name: GetJobRecord :one
-- GetJobRecord reads the whole record of one job.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs WHERE id = @id;

-- The ListJobs* queries read the records of up to max_jobs jobs with seq
-- below before, newest first, that match every filter in the query's name.
-- They are one query per set of filters, not one with "filter IS NULL OR",
-- which no index can serve: the store picks the query by the filters given
-- (listing.py), and each reads one index in seq order, never sorting the
-- finished rows. ListJobsInOrder, ListJobsByKind, ListJobsByQueue and
-- ListJobsByKindQueue take a status of null (any) or succeeded; the
-- ListJobsByRareStatus* queries list a status a job seldom reaches (failed,
-- cancelled, pending), and ListJobsQueued the queued jobs and ListJobsRunning the running ones. The indexes of
-- status and kind or queue leave running rows out, so the queries that read
-- them say "status <> 'running'" (the planner cannot prove it of a
-- parameter), and running jobs are read from jobs_running. Differs from
-- SQLite, whose status-free jobs_by_kind and jobs_by_queue cost a claim and
-- a finish nothing: here every status change writes an entry in each index
-- whose condition the new row meets (see postgres/schema.sql).

-- name: ListJobsInOrder :many
-- ListJobsInOrder reads the primary key in order, keeping the jobs of status when
-- one is given: a page costs the jobs of other statuses it skips as well.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq < @before
    AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByKind :many
-- ListJobsByKind lists the jobs of kind, and of status when one is given.
-- It reads the newest page of each status the status given allows (null:
-- every status), and keeps the newest page of them: the running jobs' from
-- jobs_running (a MATERIALIZED CTE, as in ListJobsRunning), each other
-- status's from jobs_by_status_kind in order. A branch whose status the
-- status given rules out is not run. It lists every status of the jobs
-- table's CHECK. The newest page of their seqs is taken before the rows are
-- read, so that the planner reads each row by its seq, never the primary key
-- in order looking for them.
WITH running AS MATERIALIZED (
    SELECT seq FROM jobs WHERE status = 'running' AND kind = @kind AND seq < @before
)
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq IN (
    SELECT pages.seq FROM (
        SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'queued' AND page.status <> 'running' AND page.kind = @kind AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'queued')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS queued
        UNION ALL SELECT seq FROM (
            SELECT seq FROM running WHERE sqlc.narg(status)::text IS NULL
            ORDER BY seq DESC LIMIT @max_jobs
        ) AS running_page
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'succeeded' AND page.status <> 'running' AND page.kind = @kind AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'succeeded')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS succeeded
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'failed' AND page.status <> 'running' AND page.kind = @kind AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS failed
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'cancelled' AND page.status <> 'running' AND page.kind = @kind AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'cancelled')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS cancelled
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'pending' AND page.status <> 'running' AND page.kind = @kind AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS pending
    ) AS pages
    ORDER BY pages.seq DESC LIMIT @max_jobs
)
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByQueue :many
-- ListJobsByQueue lists the jobs of queue, and of status when one is given.
-- It reads the newest page of each status the status given allows (null:
-- every status), and keeps the newest page of them: the running jobs' from
-- jobs_running (a MATERIALIZED CTE, as in ListJobsRunning), each other
-- status's from jobs_by_status_queue in order. A branch whose status the
-- status given rules out is not run. It lists every status of the jobs
-- table's CHECK. The newest page of their seqs is taken before the rows are
-- read, so that the planner reads each row by its seq, never the primary key
-- in order looking for them.
WITH running AS MATERIALIZED (
    SELECT seq FROM jobs WHERE status = 'running' AND queue = @queue AND seq < @before
)
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq IN (
    SELECT pages.seq FROM (
        SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'queued' AND page.status <> 'running' AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'queued')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS queued
        UNION ALL SELECT seq FROM (
            SELECT seq FROM running WHERE sqlc.narg(status)::text IS NULL
            ORDER BY seq DESC LIMIT @max_jobs
        ) AS running_page
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'succeeded' AND page.status <> 'running' AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'succeeded')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS succeeded
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'failed' AND page.status <> 'running' AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS failed
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'cancelled' AND page.status <> 'running' AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'cancelled')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS cancelled
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'pending' AND page.status <> 'running' AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS pending
    ) AS pages
    ORDER BY pages.seq DESC LIMIT @max_jobs
)
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByKindQueue :many
-- ListJobsByKindQueue lists the jobs of kind in queue, and of status when
-- one is given. A kind's jobs are mostly in one queue, so the pages of
-- jobs_by_status_kind keep the jobs of queue.
-- It reads the newest page of each status the status given allows (null:
-- every status), and keeps the newest page of them: the running jobs' from
-- jobs_running (a MATERIALIZED CTE, as in ListJobsRunning), each other
-- status's from jobs_by_status_kind in order. A branch whose status the
-- status given rules out is not run. It lists every status of the jobs
-- table's CHECK. The newest page of their seqs is taken before the rows are
-- read, so that the planner reads each row by its seq, never the primary key
-- in order looking for them.
WITH running AS MATERIALIZED (
    SELECT seq FROM jobs WHERE status = 'running' AND kind = @kind AND queue = @queue AND seq < @before
)
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq IN (
    SELECT pages.seq FROM (
        SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'queued' AND page.status <> 'running' AND page.kind = @kind AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'queued')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS queued
        UNION ALL SELECT seq FROM (
            SELECT seq FROM running WHERE sqlc.narg(status)::text IS NULL
            ORDER BY seq DESC LIMIT @max_jobs
        ) AS running_page
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'succeeded' AND page.status <> 'running' AND page.kind = @kind AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'succeeded')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS succeeded
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'failed' AND page.status <> 'running' AND page.kind = @kind AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'failed')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS failed
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'cancelled' AND page.status <> 'running' AND page.kind = @kind AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'cancelled')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS cancelled
        UNION ALL SELECT seq FROM (
            SELECT page.seq FROM jobs AS page
            WHERE page.status = 'pending' AND page.status <> 'running' AND page.kind = @kind AND page.queue = @queue AND page.seq < @before
                AND (sqlc.narg(status)::text IS NULL OR sqlc.narg(status)::text = 'pending')
            ORDER BY page.seq DESC LIMIT @max_jobs
        ) AS pending
    ) AS pages
    ORDER BY pages.seq DESC LIMIT @max_jobs
)
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByRareStatus :many
-- ListJobsByRareStatus reads jobs_by_rare_status in order. Its status is
-- failed, cancelled or pending.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE status = @status AND seq < @before
    AND status IN ('failed', 'cancelled', 'pending')
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByRareStatusKind :many
-- ListJobsByRareStatusKind reads jobs_by_status_kind in order, keeping the
-- jobs of queue when one is given (a kind's jobs are mostly in one queue).
-- Its status is failed, cancelled or pending.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE status = @status AND status <> 'running' AND kind = @kind AND seq < @before
    AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByRareStatusQueue :many
-- ListJobsByRareStatusQueue reads jobs_by_status_queue in order. Its status
-- is failed, cancelled or pending.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE status = @status AND status <> 'running' AND queue = @queue AND seq < @before
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsQueued :many
-- ListJobsQueued lists the queued jobs that match each filter given (a null
-- filter matches all): it reads the queued rows only, the ready ones from
-- jobs_queued and the scheduled ones from jobs_scheduled (the claim's and
-- the staging's indexes), and sorts their seqs, so a page costs the queued
-- jobs, however many finished ones there are.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq IN (
    SELECT seq FROM (
        SELECT ready.seq FROM jobs AS ready
        WHERE ready.status = 'queued' AND ready.scheduled = false AND ready.seq < @before
            AND (sqlc.narg(kind)::text IS NULL OR ready.kind = sqlc.narg(kind))
            AND (sqlc.narg(queue)::text IS NULL OR ready.queue = sqlc.narg(queue))
        UNION ALL
        SELECT later.seq FROM jobs AS later
        WHERE later.status = 'queued' AND later.scheduled = true AND later.seq < @before
            AND (sqlc.narg(kind)::text IS NULL OR later.kind = sqlc.narg(kind))
            AND (sqlc.narg(queue)::text IS NULL OR later.queue = sqlc.narg(queue))
    ) AS queued
    ORDER BY seq DESC LIMIT @max_jobs
)
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsRunning :many
-- ListJobsRunning lists the running jobs that match each filter given (a null
-- filter matches all): it reads every running row from jobs_running, as many
-- as the runners have workers at most, and sorts them. The rows are a
-- MATERIALIZED CTE, which the planner plans for all its rows: given the LIMIT,
-- it would rather read the primary key backwards, past every finished row
-- newer than the running ones.
WITH running AS MATERIALIZED (
    SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
        attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
        finished_at, updated_at, tags, meta
    FROM jobs
    WHERE status = 'running' AND seq < @before
        AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind))
        AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue))
)
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM running
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByTag :many
-- ListJobsByTag reads job_tags's range of tag in seq order (job_tags's
-- primary key) and each job by its seq, so a page costs about max_jobs
-- lookups however many jobs the table or the tag has. Differs from SQLite
-- by necessity: the job is read in a LATERAL subquery with a LIMIT, which
-- the planner cannot turn into a join; as a join, it would rather merge
-- job_tags's range with the whole primary key of jobs, both in seq order.
SELECT jobs.seq, jobs.id, jobs.kind, jobs.queue, jobs.priority, jobs.status, jobs.payload,
    jobs.result, jobs.error, jobs.errors, jobs.runner, jobs.attempt, jobs.max_attempts,
    jobs.timeout, jobs.cancel_requested, jobs.run_at, jobs.created_at, jobs.started_at,
    jobs.finished_at, jobs.updated_at, jobs.tags, jobs.meta
FROM job_tags CROSS JOIN LATERAL (
    SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
        attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
        finished_at, updated_at, tags, meta
    FROM jobs AS job WHERE job.seq = job_tags.seq LIMIT 1
) AS jobs
WHERE job_tags.tag = @tag AND job_tags.seq < @before
ORDER BY job_tags.seq DESC LIMIT @max_jobs;

-- name: ListJobsByTagFiltered :many
-- ListJobsByTagFiltered is ListJobsByTag keeping the jobs that match each
-- other filter given (a null filter matches all): it reads the tag's range
-- in seq order and skips the jobs that do not match, so a page costs the
-- tag's jobs it skips as well; a tag names a small set of jobs, so that
-- stays small where no other index could serve tag and filter together.
SELECT jobs.seq, jobs.id, jobs.kind, jobs.queue, jobs.priority, jobs.status, jobs.payload,
    jobs.result, jobs.error, jobs.errors, jobs.runner, jobs.attempt, jobs.max_attempts,
    jobs.timeout, jobs.cancel_requested, jobs.run_at, jobs.created_at, jobs.started_at,
    jobs.finished_at, jobs.updated_at, jobs.tags, jobs.meta
FROM job_tags CROSS JOIN LATERAL (
    SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
        attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
        finished_at, updated_at, tags, meta
    FROM jobs AS job WHERE job.seq = job_tags.seq
        AND (sqlc.narg(status)::text IS NULL OR job.status = sqlc.narg(status))
        AND (sqlc.narg(kind)::text IS NULL OR job.kind = sqlc.narg(kind))
        AND (sqlc.narg(queue)::text IS NULL OR job.queue = sqlc.narg(queue))
    LIMIT 1
) AS jobs
WHERE job_tags.tag = @tag AND job_tags.seq < @before
ORDER BY job_tags.seq DESC LIMIT @max_jobs;

-- name: CountJobs :many
-- CountJobs counts the jobs of each queue by status.
SELECT queue, status, count(*) AS jobs FROM jobs GROUP BY queue, status ORDER BY queue, status;

-- name: DeleteFinishedJobs :execrows
-- DeleteFinishedJobs deletes up to max_jobs jobs that finished before before,
-- oldest first, skipping rows another runner's maintenance is deleting. A
-- job of a workflow whose end another job has not counted (a failed
-- dependency, and the dependent it cancelled) is kept until that job is
-- deleted: the dependent goes first, so none is left needing a job that is
-- gone. Only a job of a workflow reads job_deps. A failed or cancelled job
-- of a sequence may hold the jobs behind it (sequence_blocks): deleting one
-- wakes idle runners at commit, as an enqueue does; other deletes notify
-- nothing, so the runners' pruning costs them nothing. Differs by necessity
-- from SQLite, whose runners watch the file.
WITH pruned AS (
    DELETE FROM jobs WHERE seq IN (
        SELECT finished.seq FROM jobs AS finished
        WHERE finished.status IN ('succeeded', 'failed', 'cancelled')
            AND finished.updated_at < @before
            AND (finished.workflow_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM job_deps AS d WHERE d.dep = finished.id AND NOT d.done
            ))
        ORDER BY finished.updated_at LIMIT @max_jobs
        FOR UPDATE SKIP LOCKED
    )
    RETURNING sequence_key, status
),
released AS MATERIALIZED (
    SELECT pg_notify(jobtable_channel(current_schema()), 'released') FROM pruned
    WHERE sequence_key IS NOT NULL AND status <> 'succeeded' HAVING count(*) > 0
)
SELECT 1 FROM pruned LEFT JOIN released ON true;

-- name: RegisterRunner :exec
-- RegisterRunner records a starting runner, replacing an earlier one of the
-- same name, with the host and process it runs in (null: unknown). Differs
-- from SQLite: the times are the server's (see
-- InterruptJobsOfDeadRunners).
INSERT INTO runners (name, started_at, heartbeat_at, host, process)
VALUES (@name, now(), now(), @host, @process)
ON CONFLICT (name) DO UPDATE
SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
    host = excluded.host, process = excluded.process, missing_keys = NULL;

-- name: HeartbeatRunner :execrows
-- HeartbeatRunner renews a runner's lease; 0 rows means it lost its row.
UPDATE runners SET heartbeat_at = now() WHERE name = @name;

-- name: SetRunnerMissingKeys :exec
-- SetRunnerMissingKeys records the secret key ids the runner lacked, a
-- sorted JSON array, or null for none.
UPDATE runners SET missing_keys = @missing_keys WHERE name = @name;

-- name: GetRunner :one
-- GetRunner reads a runner's registration, and whether its heartbeat is
-- not older than lease_seconds by the server's clock.
SELECT name, started_at, heartbeat_at,
    heartbeat_at >= now() - make_interval(secs => @lease_seconds) AS alive
FROM runners WHERE name = @name;

-- name: DeleteRunner :exec
DELETE FROM runners WHERE name = @name;

-- name: ListRunnersOnHost :many
-- ListRunnersOnHost lists the runners that recorded host as theirs, with
-- their process, never name, the runner that asks.
SELECT name, process FROM runners
WHERE host = @host AND process IS NOT NULL AND name <> @name
ORDER BY name;

-- name: DeleteRunnerProcess :execrows
-- DeleteRunnerProcess forgets the runner named name while its row is still
-- the one process recorded on host: 0 rows means another process has
-- registered under that name since, or the runner is gone already. Until
-- the transaction ends, the deleted row keeps another process from
-- registering under that name (its INSERT waits), so the jobs running under
-- the name are the gone process's.
DELETE FROM runners WHERE name = @name AND host = @host AND process = @process;

-- name: DeleteDeadRunners :execrows
-- DeleteDeadRunners forgets runners whose heartbeat is older than
-- lease_seconds by the server's clock, never name, the runner that asks. It
-- skips rows another transaction holds: a runner renewing its lease holds its
-- own row, and two runners deleting each other's rows would deadlock.
DELETE FROM runners WHERE name IN (
    SELECT stale.name FROM runners AS stale
    WHERE stale.heartbeat_at < now() - make_interval(secs => @lease_seconds)
        AND stale.name <> @name
    FOR UPDATE SKIP LOCKED
);

-- name: JobsStatisticsStale :one
-- JobsStatisticsStale tells whether the planner's statistics of the jobs
-- table describe a table far smaller than it is now: never gathered, or
-- gathered when it held under half the rows it holds live now (tables of
-- under 500 live rows never count as stale). On such statistics every queued job looks rare, each of
-- the claim's indexes looks as cheap as the others, and a partitioned claim
-- over 20,000 queued jobs took 0.8 s instead of 15 ms. Autovacuum gathers
-- them too, but only after its naptime (a minute by default), and never
-- where it is off. Only a role that may analyze the table (its owner's or
-- the database owner's, or a superuser) is told they are stale: for any
-- other the server would skip ANALYZE with a warning at every heartbeat.
SELECT (s.n_live_tup >= 500 AND s.n_live_tup > 2 * GREATEST(c.reltuples, 250)::bigint
    AND (pg_has_role(c.relowner, 'USAGE') OR pg_has_role(d.datdba, 'USAGE')))::boolean AS stale
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_stat_user_tables AS s ON s.relid = c.oid
JOIN pg_catalog.pg_database AS d ON d.datname = current_database()
WHERE c.oid = 'jobs'::regclass;

-- name: AnalyzeJobs :exec
-- AnalyzeJobs gathers the planner's statistics of the jobs table, giving up
-- with an error after lock_timeout when a vacuum holds the table (run
-- SetAnalyzeLockTimeout first, in the same transaction).
ANALYZE jobs;

-- name: SetAnalyzeLockTimeout :exec
-- SetAnalyzeLockTimeout makes a lock wait in this transaction give up after
-- 100 ms: AnalyzeJobs waits behind a running vacuum of jobs otherwise.
SELECT set_config('lock_timeout', '100ms', true);

-- name: CountReadyJobs :many
-- CountReadyJobs counts the ready jobs of each queue and finds the earliest
-- run_at among them: the backlog telemetry's gauges report. It reads only
-- the claim's index and the rows it points to, so it costs the backlog's
-- size, never the table's.
SELECT queue, count(*) AS jobs, min(run_at)::timestamptz AS oldest_run_at FROM jobs
WHERE status = 'queued' AND scheduled = false
GROUP BY queue ORDER BY queue;

-- name: CountDueJobs :many
-- CountDueJobs counts the scheduled jobs of each queue whose run_at has come
-- but that no runner has staged yet, and finds the earliest run_at among
-- them: with no runner taking the queue, they are backlog too.
SELECT queue, count(*) AS jobs, min(run_at)::timestamptz AS oldest_run_at FROM jobs
WHERE status = 'queued' AND scheduled = true AND run_at <= @now
GROUP BY queue ORDER BY queue;
