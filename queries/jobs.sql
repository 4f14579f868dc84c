-- name: CreateJob :exec
-- CreateJob stores a queued job that may be claimed from run_at on.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at > @now,
    @now, @now, sqlc.narg(traceparent), sqlc.narg(partition_key), sqlc.narg(sequence_key),
    @sequence_blocks, @tags, sqlc.narg(meta)
);

-- name: CreateJobs :batchexec
-- CreateJobs stores queued jobs, one statement per row, all sent at once.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at > @now,
    @now, @now, sqlc.narg(traceparent), sqlc.narg(partition_key), sqlc.narg(sequence_key),
    @sequence_blocks, @tags, sqlc.narg(meta)
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
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at > @now,
    @now, @now, sqlc.narg(traceparent), @unique_key, @unique_statuses, sqlc.narg(partition_key),
    sqlc.narg(sequence_key), @sequence_blocks, @tags, sqlc.narg(meta)
)
ON CONFLICT DO NOTHING;

-- name: GetUniqueHolder :one
-- GetUniqueHolder reads the job of kind that holds unique_key, if one does:
-- its condition is jobs_unique's, so it reads that index.
SELECT id FROM jobs
WHERE kind = @kind AND unique_key = @unique_key AND unique_key IS NOT NULL
    AND (unique_statuses & CASE status
        WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
        WHEN 'failed' THEN 8 ELSE 16 END) <> 0;

-- name: ClaimNextJob :many
-- ClaimNextJob marks up to max_jobs ready jobs of queue running for runner,
-- lowest priority first and oldest first within one, and returns them with
-- their new attempt. Only ready jobs are claimed: a scheduled job becomes
-- ready when StageJobs finds its run_at has come. It is the claim of a queue
-- without flow control: it claims nothing while the queue's row in queues is
-- paused or has a limit (the runner then claims with ClaimLimitedJobs, or
-- for a limit per key picks with PickPartitionedJobs and claims each pick
-- with ClaimJob), which costs one primary key lookup per claim. A job
-- of a sequence is skipped while an earlier one of its sequence holds it back
-- (see jobs_sequence); a job without one pays nothing for it.
-- RETURNING does not keep the subquery's order: callers sort by (priority, seq).
UPDATE jobs
SET status = 'running', runner = @runner, attempt = attempt + 1,
    started_at = @now, updated_at = @now
WHERE seq IN (
    SELECT ready.seq FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.queue = @queue
        AND NOT EXISTS (
            SELECT 1 FROM queues AS flow
            WHERE flow.name = @queue AND (flow.paused = 1 OR flow.concurrency IS NOT NULL
                OR flow.partition_limit IS NOT NULL OR flow.rate_limit IS NOT NULL)
        )
        AND (ready.sequence_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs AS prior
            WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks = 1)
        ))
    ORDER BY ready.priority, ready.seq LIMIT @max_jobs
)
RETURNING seq, id, kind, payload, attempt, max_attempts, timeout, priority, traceparent, partition_key,
    workflow_id;

-- name: ClaimNextJobOfKinds :many
-- ClaimNextJobOfKinds is ClaimNextJob for a runner that claims only the
-- kinds it has handlers for: kinds is a JSON array of their names. It is a
-- statement of its own so that the plain claim pays nothing for the filter.
-- RETURNING does not keep the subquery's order: callers sort by (priority, seq).
UPDATE jobs
SET status = 'running', runner = @runner, attempt = attempt + 1,
    started_at = @now, updated_at = @now
WHERE seq IN (
    SELECT ready.seq FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.queue = @queue
        AND ready.kind IN (SELECT value FROM json_each(CAST(@kinds AS TEXT)))
        AND NOT EXISTS (
            SELECT 1 FROM queues AS flow
            WHERE flow.name = @queue AND (flow.paused = 1 OR flow.concurrency IS NOT NULL
                OR flow.partition_limit IS NOT NULL OR flow.rate_limit IS NOT NULL)
        )
        AND (ready.sequence_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs AS prior
            WHERE prior.sequence_key = ready.sequence_key AND prior.seq < ready.seq
                AND prior.sequence_key IS NOT NULL AND prior.status <> 'succeeded'
                AND (prior.status IN ('queued', 'pending', 'running') OR prior.sequence_blocks = 1)
        ))
    ORDER BY ready.priority, ready.seq LIMIT @max_jobs
)
RETURNING seq, id, kind, payload, attempt, max_attempts, timeout, priority, traceparent, partition_key,
    workflow_id;

-- name: NextRunAt :one
-- NextRunAt returns the earliest run_at among the scheduled jobs of queue:
-- an idle runner sleeps until then at most.
SELECT run_at FROM jobs WHERE status = 'queued' AND scheduled = 1 AND queue = @queue
ORDER BY run_at LIMIT 1;

-- name: StageJobs :execrows
-- StageJobs makes the scheduled jobs of queue whose run_at has come ready to
-- be claimed.
UPDATE jobs SET scheduled = 0
WHERE status = 'queued' AND scheduled = 1 AND queue = @queue AND run_at <= @now;

-- name: ReadyRetries :execrows
-- ReadyRetries makes the queued jobs of queue that wait for another attempt
-- (claimed before, their run_at not come yet) ready to be claimed now, their
-- run_at left as it was: jobtable.testing's drain runs retries without
-- waiting for their backoff. A job that sleeps or waits for a signal (its
-- wait in job_waits recorded by its last change) is left as it is. It reads
-- jobs_scheduled, which SQLite is told: without statistics it would read
-- jobs_by_queue, every job of the queue.
UPDATE jobs SET scheduled = 0
WHERE seq IN (
    SELECT waiting.seq FROM jobs AS waiting INDEXED BY jobs_scheduled
    WHERE waiting.status = 'queued' AND waiting.scheduled = 1 AND waiting.queue = @queue
        AND waiting.attempt > 0
        AND NOT EXISTS (
            SELECT 1 FROM job_waits
            WHERE job_waits.job_id = waiting.id AND job_waits.since = waiting.updated_at
        )
);

-- name: PublishJobResult :execrows
-- PublishJobResult stores a partial result while the claim of attempt holds,
-- and counts it (published), so that a stream never yields one twice.
UPDATE jobs SET result = @result, updated_at = @now, published = published + 1
WHERE id = @id AND status = 'running' AND attempt = @attempt;

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
    errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', CAST(@error AS TEXT), 'at', @now)),
    finished_at = @now, updated_at = @now, run_trace = @run_trace
WHERE id = @id AND status = 'running' AND attempt = @attempt;

-- name: RetryJob :execrows
-- RetryJob puts the job back in its queue from run_at on, with error in its
-- history, while the claim of attempt holds; a job whose cancel was
-- requested is cancelled instead.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,
    errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', CAST(@error AS TEXT), 'at', @now)),
    run_at = @run_at, scheduled = @run_at > @now, runner = NULL,
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
    run_at = @run_at, scheduled = @run_at > @now, runner = NULL,
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
    errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', CAST(@error AS TEXT), 'at', @now)),
    run_at = @now, scheduled = 0,
    runner = CASE WHEN attempt < max_attempts THEN NULL ELSE runner END,
    finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN @now END,
    updated_at = @now
WHERE status = 'running' AND runner = @runner;

-- name: InterruptJobsOfDeadRunners :execrows
-- InterruptJobsOfDeadRunners ends, as InterruptRunningJobs does, the attempt
-- of the running jobs of every runner whose heartbeat is older than cutoff,
-- or that no longer has a row; never those of runner, the runner that asks,
-- which is alive.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled'
        WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END,
    error = CASE WHEN cancel_requested OR attempt < max_attempts THEN NULL ELSE @error END,
    errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', CAST(@error AS TEXT), 'at', @now)),
    run_at = @now, scheduled = 0,
    runner = CASE WHEN attempt < max_attempts THEN NULL ELSE runner END,
    finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN @now END,
    updated_at = @now
WHERE status = 'running'
    AND (runner IS NULL OR (runner <> @runner AND runner NOT IN (
        SELECT name FROM runners WHERE heartbeat_at >= @cutoff
    )));

-- name: InterruptJob :execrows
-- InterruptJob ends, as InterruptRunningJobs does, the attempt of one job
-- while the claim of attempt holds.
UPDATE jobs
SET status = CASE WHEN cancel_requested THEN 'cancelled'
        WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END,
    error = CASE WHEN cancel_requested OR attempt < max_attempts THEN NULL ELSE @error END,
    errors = json_insert(errors, '$[#]', json_object('attempt', attempt, 'error', CAST(@error AS TEXT), 'at', @now)),
    run_at = @now, scheduled = 0,
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
-- a retry, a delete): the statements after it in the transaction find the
-- job as it read. Differs by necessity from PostgreSQL, which locks the row
-- (FOR UPDATE): SQLite has no row locks, and needs none, since its write
-- transactions (BEGIN IMMEDIATE) hold the database's one write lock from
-- their start.
SELECT status FROM jobs WHERE id = @id;

-- name: CancelQueuedJob :execrows
-- CancelQueuedJob cancels a job that is still queued, or pending (a job of
-- a workflow waiting for its dependencies).
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE id = @id AND (status = 'queued' OR status = 'pending');

-- name: RequestCancel :execrows
-- RequestCancel asks the runner holding a running job to cancel it.
UPDATE jobs SET cancel_requested = 1, updated_at = @now
WHERE id = @id AND status = 'running';

-- name: DebounceJob :one
-- DebounceJob updates the job of kind that holds debounce_key while it waits
-- for its first claim (jobs_debounce), if one does: its payload becomes
-- payload when replace is set (else it keeps its own), and its run_at becomes
-- run_at, the end of the new quiet period. Its other columns stay as stored.
-- It returns the job's id, or no row when no job holds the key.
UPDATE jobs
SET payload = CASE WHEN CAST(@replace AS BOOLEAN) THEN CAST(@payload AS TEXT) ELSE payload END,
    run_at = @run_at, scheduled = @run_at > @now, updated_at = @now
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
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at > @now,
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
-- no job has returns no row. ids is a JSON array of text.
SELECT id, kind, status, result, error FROM jobs WHERE id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

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
-- ListJobsByKindQueue take a status of null (any) or succeeded: they
-- read an index that holds every status (a claim and a finish write none of
-- them) and skip the jobs of other statuses, so a page costs the jobs it
-- skips as well. The ListJobsByRareStatus* queries list a status a job seldom
-- reaches (failed, cancelled, pending) from its own indexes, and
-- ListJobsQueued the queued jobs and ListJobsRunning the running ones.

-- name: ListJobsInOrder :many
-- ListJobsInOrder reads the primary key in order, keeping the jobs of status when
-- one is given.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq < @before
    AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR status = sqlc.narg(status))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByKind :many
-- ListJobsByKind reads jobs_by_kind in order, keeping the jobs of status
-- when one is given.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE kind = @kind AND seq < @before
    AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR status = sqlc.narg(status))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByQueue :many
-- ListJobsByQueue reads jobs_by_queue in order, keeping the jobs of status
-- when one is given.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE queue = @queue AND seq < @before
    AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR status = sqlc.narg(status))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByKindQueue :many
-- ListJobsByKindQueue reads jobs_by_kind in order and keeps the jobs of
-- queue (a kind's jobs are mostly in one queue), and of status when one is
-- given.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs INDEXED BY jobs_by_kind
WHERE kind = @kind AND queue = @queue AND seq < @before
    AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR status = sqlc.narg(status))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByRareStatus :many
-- ListJobsByRareStatus reads jobs_by_rare_status in order. Its status is
-- failed, cancelled or pending.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE status = @status AND seq < @before
    AND (status = 'failed' OR status = 'cancelled' OR status = 'pending')
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByRareStatusKind :many
-- ListJobsByRareStatusKind reads jobs_by_rare_status_kind in order, keeping
-- the jobs of queue when one is given. Its status is failed, cancelled or
-- pending.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE status = @status AND kind = @kind AND seq < @before
    AND (status = 'failed' OR status = 'cancelled' OR status = 'pending')
    AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByRareStatusQueue :many
-- ListJobsByRareStatusQueue reads jobs_by_rare_status_queue in order. Its
-- status is failed, cancelled or pending.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE status = @status AND queue = @queue AND seq < @before
    AND (status = 'failed' OR status = 'cancelled' OR status = 'pending')
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsQueued :many
-- ListJobsQueued lists the queued jobs that match each filter given (a null
-- filter matches all): it reads the queued rows only, the ready ones from
-- jobs_queued and the scheduled ones from jobs_scheduled (the claim's and
-- the staging's indexes), and sorts their seqs, so a page costs the queued
-- jobs, however many finished ones there are. SQLite is told the indexes:
-- left to itself, it reads the primary key backwards to spare the sort.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs
WHERE seq IN (
    SELECT seq FROM (
        SELECT ready.seq FROM jobs AS ready INDEXED BY jobs_queued
        WHERE ready.status = 'queued' AND ready.scheduled = 0 AND ready.seq < @before
            AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR ready.kind = sqlc.narg(kind))
            AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR ready.queue = sqlc.narg(queue))
        UNION ALL
        SELECT later.seq FROM jobs AS later INDEXED BY jobs_scheduled
        WHERE later.status = 'queued' AND later.scheduled = 1 AND later.seq < @before
            AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR later.kind = sqlc.narg(kind))
            AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR later.queue = sqlc.narg(queue))
    ) AS queued
    ORDER BY seq DESC LIMIT @max_jobs
)
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsRunning :many
-- ListJobsRunning lists the running jobs that match each filter given (a null
-- filter matches all): it reads every running row from jobs_running, as many
-- as the runners have workers at most, and sorts them.
SELECT seq, id, kind, queue, priority, status, payload, result, error, errors, runner,
    attempt, max_attempts, timeout, cancel_requested, run_at, created_at, started_at,
    finished_at, updated_at, tags, meta
FROM jobs INDEXED BY jobs_running
WHERE status = 'running' AND seq < @before
    AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR kind = sqlc.narg(kind))
    AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR queue = sqlc.narg(queue))
ORDER BY seq DESC LIMIT @max_jobs;

-- name: ListJobsByTag :many
-- ListJobsByTag reads job_tags's range of tag in seq order (job_tags's
-- primary key) and each job by its seq, so a page costs about max_jobs
-- lookups however many jobs the table or the tag has.
SELECT jobs.seq, jobs.id, jobs.kind, jobs.queue, jobs.priority, jobs.status, jobs.payload,
    jobs.result, jobs.error, jobs.errors, jobs.runner, jobs.attempt, jobs.max_attempts,
    jobs.timeout, jobs.cancel_requested, jobs.run_at, jobs.created_at, jobs.started_at,
    jobs.finished_at, jobs.updated_at, jobs.tags, jobs.meta
FROM job_tags JOIN jobs ON jobs.seq = job_tags.seq
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
FROM job_tags JOIN jobs ON jobs.seq = job_tags.seq
WHERE job_tags.tag = @tag AND job_tags.seq < @before
    AND (CAST(sqlc.narg(status) AS TEXT) IS NULL OR jobs.status = sqlc.narg(status))
    AND (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR jobs.kind = sqlc.narg(kind))
    AND (CAST(sqlc.narg(queue) AS TEXT) IS NULL OR jobs.queue = sqlc.narg(queue))
ORDER BY job_tags.seq DESC LIMIT @max_jobs;

-- name: CountJobs :many
-- CountJobs counts the jobs of each queue by status.
SELECT queue, status, count(*) AS jobs FROM jobs GROUP BY queue, status ORDER BY queue, status;

-- name: DeleteFinishedJobs :execrows
-- DeleteFinishedJobs deletes up to max_jobs jobs that finished before before,
-- oldest first. A job of a workflow whose end another job has not counted
-- (a failed dependency, and the dependent it cancelled) is kept until that
-- job is deleted: the dependent goes first, so none is left needing a job
-- that is gone. Only a job of a workflow reads job_deps.
DELETE FROM jobs WHERE seq IN (
    SELECT finished.seq FROM jobs AS finished
    WHERE (finished.status = 'succeeded' OR finished.status = 'failed' OR finished.status = 'cancelled')
        AND finished.updated_at < @before
        AND (finished.workflow_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM job_deps AS d WHERE d.dep = finished.id AND d.done = 0
        ))
    ORDER BY finished.updated_at LIMIT @max_jobs
);

-- name: RegisterRunner :exec
-- RegisterRunner records a starting runner, replacing an earlier one of the
-- same name, with the host and process it runs in (null: unknown).
INSERT INTO runners (name, started_at, heartbeat_at, host, process)
VALUES (@name, @now, @now, @host, @process)
ON CONFLICT (name) DO UPDATE
SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
    host = excluded.host, process = excluded.process, missing_keys = NULL;

-- name: HeartbeatRunner :execrows
-- HeartbeatRunner renews a runner's lease; 0 rows means it lost its row.
UPDATE runners SET heartbeat_at = @now WHERE name = @name;

-- name: SetRunnerMissingKeys :exec
-- SetRunnerMissingKeys records the secret key ids the runner lacked, a
-- sorted JSON array, or null for none.
UPDATE runners SET missing_keys = @missing_keys WHERE name = @name;

-- name: GetRunner :one
-- GetRunner reads a runner's registration, and whether its heartbeat is
-- not older than cutoff.
SELECT name, started_at, heartbeat_at, heartbeat_at >= @cutoff AS alive
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
-- registered under that name since, or the runner is gone already.
DELETE FROM runners WHERE name = @name AND host = @host AND process = @process;

-- name: DeleteDeadRunners :execrows
-- DeleteDeadRunners forgets runners whose heartbeat is older than cutoff,
-- never name, the runner that asks.
DELETE FROM runners WHERE heartbeat_at < @cutoff AND name <> @name;

-- name: CountReadyJobs :many
-- CountReadyJobs counts the ready jobs of each queue and finds the earliest
-- run_at among them: the backlog telemetry's gauges report. It reads only
-- the claim's index and the rows it points to, so it costs the backlog's
-- size, never the table's.
SELECT queue, count(*) AS jobs, CAST(min(run_at) AS TEXT) AS oldest_run_at FROM jobs
WHERE status = 'queued' AND scheduled = 0
GROUP BY queue ORDER BY queue;

-- name: CountDueJobs :many
-- CountDueJobs counts the scheduled jobs of each queue whose run_at has come
-- but that no runner has staged yet, and finds the earliest run_at among
-- them: with no runner taking the queue, they are backlog too.
SELECT queue, count(*) AS jobs, CAST(min(run_at) AS TEXT) AS oldest_run_at FROM jobs
WHERE status = 'queued' AND scheduled = 1 AND run_at <= @now
GROUP BY queue ORDER BY queue;
