-- The workflows' queries: jobs with dependencies. A job of a workflow that
-- waits for dependencies is pending, which no claim reads; its dependencies'
-- ends are settled by the statement that records each (FinishWorkflowJobs)
-- or in its transaction (SettleDependents), only when the finished job
-- belongs to a workflow, so nothing outside the database remembers that a
-- job waits for another.

-- name: CreateWorkflow :exec
-- CreateWorkflow names a new workflow, with its deadline or none.
INSERT INTO workflows (id, name, created_at, deadline_at)
VALUES (@id, @name, @now, sqlc.narg(deadline_at));

-- name: GetWorkflow :one
-- GetWorkflow reads a workflow's name.
SELECT id, name, created_at FROM workflows WHERE id = @id;

-- name: LockWorkflow :one
-- LockWorkflow reads a workflow's id, for a cancel of the workflow, and
-- locks its row until the transaction ends: no running job of it records a
-- success with jobs added to it until the cancel commits, since that write
-- holds the row first (HoldWorkflow). Without the lock, under READ
-- COMMITTED, a success committed between the cancel's statements could add
-- jobs that the cancel of queued jobs did not see, by a job the cancel
-- request then found ended. Differs by necessity from SQLite, which has no
-- row locks.
SELECT id FROM workflows WHERE id = @id FOR UPDATE;

-- name: HoldWorkflow :one
-- HoldWorkflow reads a workflow's id, for a write that records a job's
-- success with the jobs its handler added to the workflow, and holds its
-- row (FOR SHARE, which such writes share and LockWorkflow waits for) until
-- the transaction ends. It comes before the success is recorded, so that
-- both writes take the workflow's row before any job's: a cancel then comes
-- wholly before the success (which sees the cancel request) or wholly after
-- it (and sees the added jobs). Differs by necessity from SQLite, which has
-- no row locks.
SELECT id FROM workflows WHERE id = @id FOR SHARE;

-- name: CreateWorkflowJobs :exec
-- CreateWorkflowJobs stores jobs of workflow_id in one statement, as
-- CreateJobs does (jobs is a JSON array of one object a job, times as text
-- with a zone): each pending while pending_deps (its dependencies, stored
-- with CreateJobDeps) is above 0, else queued. Differs from SQLite, whose
-- engine has no round trip to save: there it sends a statement per row.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta, workflow_id, pending_deps, status, partition_by, sequence_by
)
SELECT job.id, job.kind, job.queue, job.priority, job.payload, job.max_attempts, job.timeout,
    job.run_at, job.run_at > job.now, job.now, job.now, job.traceparent, job.partition_key,
    job.sequence_key, coalesce(job.sequence_blocks, false), coalesce(job.tags, '[]'), job.meta,
    @workflow_id, job.pending_deps,
    CASE WHEN job.pending_deps > 0 THEN 'pending' ELSE 'queued' END,
    job.partition_by, job.sequence_by
FROM jsonb_to_recordset(@jobs::jsonb) AS job(
    id text, kind text, queue text, priority integer, payload text, max_attempts integer,
    timeout double precision, run_at timestamptz, now timestamptz, traceparent text,
    partition_key text, sequence_key text, sequence_blocks boolean, tags text, meta text,
    pending_deps integer, partition_by text, sequence_by text
);

-- name: CancelAddedJobs :execrows
-- CancelAddedJobs cancels the jobs of ids, which the handler of adder added
-- to its workflow and which were just stored with adder's success, when
-- adder's cancel was requested before that success was recorded (a cancel
-- of adder, or of its workflow): none of them ever runs, and the record
-- shows them, cancelled.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE id = ANY(@ids::text[])
    AND (status = 'queued' OR status = 'pending')
    AND EXISTS (SELECT 1 FROM jobs AS adder WHERE adder.id = @adder AND adder.cancel_requested);

-- name: HandOverDependents :exec
-- HandOverDependents makes heir, a job that job's handler added with job's
-- success, a dependency of each of job's dependents not started (a job of
-- ids, the added ones, aside): each waits for heir as it waited for job,
-- and one that job fed takes heir's result instead. CountHandedOver follows
-- in the same transaction.
INSERT INTO job_deps (dep, job, run_on_failure, feeds)
SELECT @heir::text, d.job, d.run_on_failure, d.feeds
FROM job_deps AS d JOIN jobs ON jobs.id = d.job
WHERE d.dep = @job AND jobs.status IN ('queued', 'pending')
    AND d.job <> ALL(@ids::text[]);

-- name: CountHandedOver :exec
-- CountHandedOver counts heir among the dependencies of each job that
-- HandOverDependents gave it (a job of ids, the added ones, aside): one
-- that was queued waits, pending, until heir ends.
UPDATE jobs SET pending_deps = pending_deps + 1, status = 'pending', updated_at = @now
WHERE id IN (
    SELECT d.job FROM job_deps AS d WHERE d.dep = @heir AND d.job <> ALL(@ids::text[])
) AND status IN ('queued', 'pending');

-- name: CreateJobDeps :exec
-- CreateJobDeps records, in one statement, that each job runs only after its
-- dep finished: after it succeeded, or after any end with run_on_failure;
-- feeds: dep's result becomes job's payload. deps is a JSON array of one
-- object an edge. Differs from SQLite as CreateWorkflowJobs does.
INSERT INTO job_deps (dep, job, run_on_failure, feeds)
SELECT edge.dep, edge.job, edge.run_on_failure, edge.feeds
FROM jsonb_to_recordset(@deps::jsonb) AS edge(
    dep text, job text, run_on_failure boolean, feeds boolean
);

-- name: SettleDependents :exec
-- SettleDependents settles, in one statement, the dependents of the jobs of
-- ids that ended (succeeded, failed or cancelled) and belong to a workflow:
-- the statement each write that ends such jobs runs in its transaction (a
-- runner's outcomes run FinishWorkflowJobs instead). A success's result
-- becomes the payload of the pending jobs it feeds, and each dependent
-- counts it; a failure or cancel is counted by the dependents that opted in
-- (run_on_failure), and cancels the others that are pending, naming it
-- (blocked_by), their own dependents in turn, transitively. A pending job
-- whose count reaches 0 is queued, ready at once or at its run_at, and wakes
-- idle runners (a notification on the schema's channel, at commit: the
-- insert trigger wakes them for new jobs only; SQLite's runners watch the
-- file's writes instead). The jobs it cancels notify their end as
-- FinishAndClaimJobs does (JobsEnded), so that processes waiting for them
-- wake at once. An end is counted
-- once (job_deps.done): no end counts twice, though a dependency retried
-- ends again. Differs from SQLite, whose engine has no round trip to save:
-- there each step is a statement of its own, in the same transaction.
WITH RECURSIVE root AS (
    SELECT id, status = 'succeeded' AS ok, result FROM jobs
    WHERE id = ANY(@ids::text[]) AND workflow_id IS NOT NULL
        AND status IN ('succeeded', 'failed', 'cancelled')
),
-- The jobs the failed or cancelled roots cancel, transitively: a pending
-- job that needs one of them (or a job cancelled so) to succeed.
-- Each step reads the edges of its causes by job_deps' key, and each
-- edge's job by its id: OFFSET 0 keeps the planner from reading instead
-- every pending job's edges (a fan-in has thousands).
doomed (id, cause) AS (
    SELECT edge.job, edge.dep
    FROM root, LATERAL (
        SELECT job, dep FROM job_deps
        WHERE dep = root.id AND NOT done AND NOT run_on_failure OFFSET 0
    ) AS edge
    WHERE NOT root.ok AND (SELECT status FROM jobs WHERE jobs.id = edge.job) = 'pending'
    UNION
    SELECT edge.job, edge.dep
    FROM doomed, LATERAL (
        SELECT job, dep FROM job_deps
        WHERE dep = doomed.id AND NOT done AND NOT run_on_failure OFFSET 0
    ) AS edge
    WHERE (SELECT status FROM jobs WHERE jobs.id = edge.job) = 'pending'
),
-- One reason a cancelled job: a root when one is, as the settling one root
-- at a time names it.
doom AS (
    SELECT DISTINCT ON (id) id, cause FROM doomed
    ORDER BY id, cause NOT IN (SELECT id FROM root), cause
),
settling AS (
    SELECT id, ok, result FROM root
    UNION ALL SELECT id, false, NULL::text FROM doom
),
-- Every end counted, once: any edge of a success, an opted-in edge
-- (run_on_failure) of a failure or cancel; the others stay not done.
counted AS (
    UPDATE job_deps AS edge SET done = true
    FROM settling
    WHERE edge.dep = ANY(ARRAY(SELECT id FROM settling)) AND edge.dep = settling.id
        AND NOT edge.done AND (settling.ok OR edge.run_on_failure)
    RETURNING edge.job, CASE WHEN edge.feeds AND settling.ok THEN settling.result END AS fed
),
-- What changes for each job: the ends it counts, the result that feeds
-- it, the dependency that cancels it.
plan AS (
    SELECT id, sum(ends) AS ends, max(fed) AS fed, max(cause) AS cause
    FROM (
        SELECT job AS id, 1 AS ends, fed, NULL::text AS cause FROM counted
        UNION ALL SELECT id, 0, NULL::text, cause FROM doom
    ) AS change
    GROUP BY id
),
-- The fed jobs that join a sequence now (sequence_by), each with a new
-- seq, the last of the enqueue order, taken in their own order.
joining AS MATERIALIZED (
    SELECT fed.id, nextval(pg_get_serial_sequence('jobs', 'seq')) AS seq FROM (
        SELECT jobs.id FROM plan JOIN jobs ON jobs.id = plan.id
        WHERE plan.fed IS NOT NULL AND jobs.status = 'pending' AND jobs.sequence_by IS NOT NULL
        ORDER BY jobs.seq
    ) AS fed
),
-- Only pending_deps changes for a job still waiting, which no index holds:
-- the update of a wide fan-in's row at each of its dependencies' ends stays
-- HOT, adding no index entry.
settled AS (
    UPDATE jobs
    SET pending_deps = jobs.pending_deps - plan.ends,
        payload = CASE WHEN plan.fed IS NOT NULL AND jobs.status = 'pending' THEN plan.fed
            ELSE jobs.payload END,
        -- A fed job keyed by a payload field gets its key from the result,
        -- and one that joins a sequence takes a new seq, the last.
        partition_key = CASE WHEN plan.fed IS NOT NULL AND jobs.status = 'pending'
                AND jobs.partition_by IS NOT NULL
            THEN jobtable_payload_key(plan.fed, jobs.partition_by) ELSE jobs.partition_key END,
        sequence_key = CASE WHEN plan.fed IS NOT NULL AND jobs.status = 'pending'
                AND jobs.sequence_by IS NOT NULL
            THEN jobtable_payload_key(plan.fed, jobs.sequence_by) ELSE jobs.sequence_key END,
        seq = coalesce((SELECT joining.seq FROM joining WHERE joining.id = jobs.id), jobs.seq),
        status = CASE WHEN plan.cause IS NOT NULL THEN 'cancelled'
            WHEN jobs.status = 'pending' AND jobs.pending_deps = plan.ends THEN 'queued'
            ELSE jobs.status END,
        blocked_by = coalesce(plan.cause, jobs.blocked_by),
        scheduled = CASE WHEN plan.cause IS NULL AND jobs.status = 'pending'
                AND jobs.pending_deps = plan.ends THEN jobs.run_at > @now::timestamptz
            ELSE jobs.scheduled END,
        finished_at = CASE WHEN plan.cause IS NOT NULL THEN @now ELSE jobs.finished_at END,
        updated_at = CASE WHEN plan.cause IS NOT NULL
                OR (jobs.status = 'pending' AND jobs.pending_deps = plan.ends) THEN @now
            ELSE jobs.updated_at END
    FROM plan
    WHERE jobs.id = ANY(ARRAY(SELECT id FROM plan)) AND jobs.id = plan.id
    RETURNING jobs.id, jobs.status, plan.cause, jobs.sequence_key
),
-- A job made ready wakes idle runners; so does a job of a sequence that it
-- cancels, which no longer holds a sequence that continues past it.
ready AS MATERIALIZED (
    SELECT pg_notify(jobtable_channel(current_schema()), 'released') FROM settled
    WHERE status = 'queued' OR (cause IS NOT NULL AND sequence_key IS NOT NULL)
    HAVING count(*) > 0
),
-- The jobs it cancelled ended: JobsEnded names them, as it names outcomes.
doom_ended AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
        WHEN sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\n') ELSE '' END)
    FROM settled WHERE cause IS NOT NULL
    HAVING count(*) > 0 AND NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16)
)
SELECT count(*) FROM (SELECT 1 FROM ready UNION ALL SELECT 1 FROM doom_ended) AS notified;

-- name: FinishWorkflowJobs :many
-- FinishWorkflowJobs stores the outcomes of finished attempts as
-- FinishAndClaimJobs does (the same arrays; JobsEnded's and JobsReleased's
-- notifications too, and another naming the dependents it cancels),
-- and settles, in the same statement, the dependents of the jobs of
-- workflows it ended, as SettleDependents does, and claims up to max_jobs
-- ready jobs of queue for runner as FinishAndClaimJobs does (the kinds of
-- kinds only, unless kinds is null): a runner's outcomes of workflows' jobs
-- and its next claim cost one statement, one round trip, as a plain job's.
-- The claim's snapshot is the statement's: it cannot take a dependent this
-- settle makes ready (the 'released' notification brings the runners back
-- for those). It returns the claimed jobs with finished false, and the
-- jobs it finished with finished true and only their ids; a job missing
-- from them is no longer running under its claim. Every sub-statement sees the jobs as they
-- were before it: the roots' ends come from the finished rows, and the jobs
-- the settling updates are others (pending, not running). Differs from
-- SQLite as SettleDependents does.
WITH RECURSIVE finished AS (
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
    RETURNING jobs.id, jobs.status, jobs.workflow_id, jobs.result, jobs.queue, jobs.sequence_key
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
root AS (
    SELECT id, status = 'succeeded' AS ok, result FROM finished
    WHERE workflow_id IS NOT NULL AND status IN ('succeeded', 'failed', 'cancelled')
),
-- The jobs the failed or cancelled roots cancel, transitively: a pending
-- job that needs one of them (or a job cancelled so) to succeed.
-- Each step reads the edges of its causes by job_deps' key, and each
-- edge's job by its id: OFFSET 0 keeps the planner from reading instead
-- every pending job's edges (a fan-in has thousands).
doomed (id, cause) AS (
    SELECT edge.job, edge.dep
    FROM root, LATERAL (
        SELECT job, dep FROM job_deps
        WHERE dep = root.id AND NOT done AND NOT run_on_failure OFFSET 0
    ) AS edge
    WHERE NOT root.ok AND (SELECT status FROM jobs WHERE jobs.id = edge.job) = 'pending'
    UNION
    SELECT edge.job, edge.dep
    FROM doomed, LATERAL (
        SELECT job, dep FROM job_deps
        WHERE dep = doomed.id AND NOT done AND NOT run_on_failure OFFSET 0
    ) AS edge
    WHERE (SELECT status FROM jobs WHERE jobs.id = edge.job) = 'pending'
),
-- One reason a cancelled job: a root when one is, as the settling one root
-- at a time names it.
doom AS (
    SELECT DISTINCT ON (id) id, cause FROM doomed
    ORDER BY id, cause NOT IN (SELECT id FROM root), cause
),
settling AS (
    SELECT id, ok, result FROM root
    UNION ALL SELECT id, false, NULL::text FROM doom
),
-- Every end counted, once: any edge of a success, an opted-in edge
-- (run_on_failure) of a failure or cancel; the others stay not done.
counted AS (
    UPDATE job_deps AS edge SET done = true
    FROM settling
    WHERE edge.dep = ANY(ARRAY(SELECT id FROM settling)) AND edge.dep = settling.id
        AND NOT edge.done AND (settling.ok OR edge.run_on_failure)
    RETURNING edge.job, CASE WHEN edge.feeds AND settling.ok THEN settling.result END AS fed
),
-- What changes for each job: the ends it counts, the result that feeds
-- it, the dependency that cancels it.
plan AS (
    SELECT id, sum(ends) AS ends, max(fed) AS fed, max(cause) AS cause
    FROM (
        SELECT job AS id, 1 AS ends, fed, NULL::text AS cause FROM counted
        UNION ALL SELECT id, 0, NULL::text, cause FROM doom
    ) AS change
    GROUP BY id
),
-- The fed jobs that join a sequence now (sequence_by), each with a new
-- seq, the last of the enqueue order, taken in their own order.
joining AS MATERIALIZED (
    SELECT fed.id, nextval(pg_get_serial_sequence('jobs', 'seq')) AS seq FROM (
        SELECT jobs.id FROM plan JOIN jobs ON jobs.id = plan.id
        WHERE plan.fed IS NOT NULL AND jobs.status = 'pending' AND jobs.sequence_by IS NOT NULL
        ORDER BY jobs.seq
    ) AS fed
),
-- Only pending_deps changes for a job still waiting, which no index holds:
-- the update of a wide fan-in's row at each of its dependencies' ends stays
-- HOT, adding no index entry.
settled AS (
    UPDATE jobs
    SET pending_deps = jobs.pending_deps - plan.ends,
        payload = CASE WHEN plan.fed IS NOT NULL AND jobs.status = 'pending' THEN plan.fed
            ELSE jobs.payload END,
        -- A fed job keyed by a payload field gets its key from the result,
        -- and one that joins a sequence takes a new seq, the last.
        partition_key = CASE WHEN plan.fed IS NOT NULL AND jobs.status = 'pending'
                AND jobs.partition_by IS NOT NULL
            THEN jobtable_payload_key(plan.fed, jobs.partition_by) ELSE jobs.partition_key END,
        sequence_key = CASE WHEN plan.fed IS NOT NULL AND jobs.status = 'pending'
                AND jobs.sequence_by IS NOT NULL
            THEN jobtable_payload_key(plan.fed, jobs.sequence_by) ELSE jobs.sequence_key END,
        seq = coalesce((SELECT joining.seq FROM joining WHERE joining.id = jobs.id), jobs.seq),
        status = CASE WHEN plan.cause IS NOT NULL THEN 'cancelled'
            WHEN jobs.status = 'pending' AND jobs.pending_deps = plan.ends THEN 'queued'
            ELSE jobs.status END,
        blocked_by = coalesce(plan.cause, jobs.blocked_by),
        scheduled = CASE WHEN plan.cause IS NULL AND jobs.status = 'pending'
                AND jobs.pending_deps = plan.ends THEN jobs.run_at > @now::timestamptz
            ELSE jobs.scheduled END,
        finished_at = CASE WHEN plan.cause IS NOT NULL THEN @now ELSE jobs.finished_at END,
        updated_at = CASE WHEN plan.cause IS NOT NULL
                OR (jobs.status = 'pending' AND jobs.pending_deps = plan.ends) THEN @now
            ELSE jobs.updated_at END
    FROM plan
    WHERE jobs.id = ANY(ARRAY(SELECT id FROM plan)) AND jobs.id = plan.id
    RETURNING jobs.id, jobs.status, plan.cause, jobs.sequence_key
),
-- A job made ready wakes idle runners; so does a job of a sequence that it
-- cancels, which no longer holds a sequence that continues past it.
ready AS MATERIALIZED (
    SELECT pg_notify(jobtable_channel(current_schema()), 'released') FROM settled
    WHERE status = 'queued' OR (cause IS NOT NULL AND sequence_key IS NOT NULL)
    HAVING count(*) > 0
),
-- The jobs it cancelled ended: JobsEnded names them, as it names outcomes.
doom_ended AS MATERIALIZED (
    SELECT pg_notify('jobtable-ended:' || md5(current_schema()), CASE
        WHEN sum(octet_length(id) + 1) < 7900 THEN string_agg(id, E'\n') ELSE '' END)
    FROM settled WHERE cause IS NOT NULL
    HAVING count(*) > 0 AND NOT pg_try_advisory_xact_lock(
        hashtext('jobtable-ended:' || current_schema()), pg_backend_pid() % 16)
),
-- The claim, as FinishAndClaimJobs's.
picked AS MATERIALIZED (
    SELECT ready.seq FROM jobs AS ready
    WHERE ready.status = 'queued' AND ready.scheduled = false AND ready.queue = @queue
        AND (sqlc.narg(kinds)::text[] IS NULL OR ready.kind = ANY(sqlc.narg(kinds)::text[]))
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
SELECT true, 0::bigint, finished.id, '', '', 0, 0, NULL::double precision, 0, NULL::text,
    NULL::text, NULL::text
FROM finished LEFT JOIN ended ON true LEFT JOIN released ON true
    LEFT JOIN ready ON true LEFT JOIN doom_ended ON true;

-- name: ReviveDependents :many
-- ReviveDependents puts back to pending the jobs dep's end cancelled, once
-- dep is retried, and returns their ids: their own dependents follow.
UPDATE jobs
SET status = 'pending', blocked_by = NULL, finished_at = NULL, updated_at = @now
WHERE id IN (SELECT job FROM job_deps WHERE dep = @dep)
    AND status = 'cancelled' AND blocked_by = @dep
RETURNING id;

-- name: ListBlockingDeps :many
-- ListBlockingDeps lists the dependencies of job that ended without success
-- while job needs them to succeed.
SELECT job_deps.dep FROM job_deps JOIN jobs ON jobs.id = job_deps.dep
WHERE job_deps.job = @job AND NOT job_deps.done AND NOT job_deps.run_on_failure
    AND (jobs.status = 'failed' OR jobs.status = 'cancelled');

-- name: ListDependencies :many
-- ListDependencies reads the jobs job depends on, in enqueue order.
SELECT jobs.id, jobs.kind, jobs.status, jobs.result, job_deps.run_on_failure
FROM job_deps JOIN jobs ON jobs.id = job_deps.dep
WHERE job_deps.job = @job
ORDER BY jobs.seq;

-- name: ListDependencyTraces :many
-- ListDependencyTraces reads the run traces of the jobs job depends on that
-- stored one (an instrumented store's), in enqueue order: its run span
-- links to each. Only an instrumented store reads it.
SELECT jobs.id, jobs.run_trace
FROM job_deps JOIN jobs ON jobs.id = job_deps.dep
WHERE job_deps.job = @job AND jobs.run_trace IS NOT NULL
ORDER BY jobs.seq;

-- name: ListDependents :many
-- ListDependents reads the jobs that depend on dep, in enqueue order.
SELECT jobs.id, jobs.kind, jobs.status
FROM job_deps JOIN jobs ON jobs.id = job_deps.job
WHERE job_deps.dep = @dep
ORDER BY jobs.seq;

-- name: GetJobWorkflow :one
-- GetJobWorkflow reads a job's workflow, its name, the dependency that
-- cancelled it, if any, and what tells whether its deadline cancelled it.
SELECT jobs.workflow_id, workflows.name AS workflow_name, jobs.blocked_by,
    jobs.status, jobs.finished_at, workflows.deadline_at, workflows.deadline_done
FROM jobs LEFT JOIN workflows ON workflows.id = jobs.workflow_id
WHERE jobs.id = @id;

-- name: ListWorkflowJobs :many
-- ListWorkflowJobs reads every job of a workflow, in enqueue order
-- (jobs_workflow), with its times: enqueued, last started and finished.
SELECT id, kind, status, created_at, started_at, finished_at
FROM jobs WHERE workflow_id = @workflow_id ORDER BY seq;

-- name: ListWorkflowDeps :many
-- ListWorkflowDeps reads every dependency edge of a workflow's jobs, in no
-- order: job waits for dep.
SELECT job_deps.dep, job_deps.job
FROM jobs JOIN job_deps ON job_deps.job = jobs.id
WHERE jobs.workflow_id = @workflow_id;

-- name: CancelWorkflowJobs :many
-- CancelWorkflowJobs cancels every pending or queued job of a workflow and
-- returns their ids.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE workflow_id = @workflow_id AND (status = 'queued' OR status = 'pending')
RETURNING id;

-- name: RequestCancelWorkflow :execrows
-- RequestCancelWorkflow asks the runners holding the running jobs of a
-- workflow to cancel them.
UPDATE jobs SET cancel_requested = true, updated_at = @now
WHERE workflow_id = @workflow_id AND status = 'running';

-- name: ListStrandedDeps :many
-- ListStrandedDeps lists the ended dependencies whose end a pending job has
-- not counted: the writes that end jobs in bulk (an interrupt that fails a
-- job at its last attempt, a bulk cancel) settle their dependents through
-- it. It reads the pending jobs only (jobs_by_rare_status).
SELECT DISTINCT d.dep FROM jobs AS waiting
JOIN job_deps AS d ON d.job = waiting.id
JOIN jobs AS ended ON ended.id = d.dep
WHERE waiting.status = 'pending' AND NOT d.done
    AND (ended.status = 'succeeded' OR ended.status = 'failed' OR ended.status = 'cancelled');

-- name: ReopenDependencies :exec
-- ReopenDependencies makes a retried job of a workflow wait again for each
-- dependency whose counted end an operator has since undone (it was retried
-- too, and is queued, pending or running): that edge counts again, and
-- CountPendingDeps follows in the same transaction.
UPDATE job_deps SET done = false
WHERE job = @job AND done
    AND dep IN (SELECT id FROM jobs WHERE status IN ('queued', 'pending', 'running'));

-- name: CountPendingDeps :exec
-- CountPendingDeps sets a retried job's count of dependencies not yet
-- counted, and makes it pending while one remains, queued when none does:
-- a job is never pending with nothing left to wait for.
UPDATE jobs
SET pending_deps = (SELECT count(*) FROM job_deps WHERE job_deps.job = jobs.id AND NOT done),
    status = CASE WHEN status NOT IN ('queued', 'pending') THEN status
        WHEN EXISTS (SELECT 1 FROM job_deps WHERE job_deps.job = jobs.id AND NOT done)
        THEN 'pending' ELSE 'queued' END
WHERE id = @id;

-- name: ForgetDependency :exec
-- ForgetDependency is run just before dep is deleted, once its end is
-- settled: each job that had not counted dep's end (it needed dep to
-- succeed, and is cancelled) stops counting it, since the edge goes with
-- dep, and names dep as what cancelled it for good (blocked_by). A retry of
-- such a job is refused: no end of dep can come any more. updated_at stays:
-- a finished row's is its finished_at.
UPDATE jobs
SET pending_deps = pending_deps - 1,
    blocked_by = CASE WHEN status = 'cancelled' THEN @dep ELSE blocked_by END
WHERE id IN (SELECT job FROM job_deps WHERE dep = @dep AND NOT done);

-- name: ReopenDependents :exec
-- ReopenDependents makes the jobs that counted dep's end, and have not
-- started since, wait for its new end: dep was retried. ReopenDepEdges
-- follows in the same transaction.
UPDATE jobs
SET pending_deps = pending_deps + 1, status = 'pending', updated_at = @now
WHERE status IN ('queued', 'pending')
    AND id IN (SELECT job FROM job_deps WHERE dep = @dep AND done);

-- name: ReopenDepEdges :exec
-- ReopenDepEdges uncounts dep's end for the jobs ReopenDependents reopened.
UPDATE job_deps SET done = false
WHERE dep = @dep AND done
    AND job IN (SELECT id FROM jobs WHERE status = 'pending');

-- name: ListWorkflows :many
-- ListWorkflows reads a page of workflows, newest first, after the workflow
-- named before (its created_at and id are the keyset; null: the first
-- page), with how many of each one's jobs are in each status: a row per
-- workflow and status, and one with a null status and no jobs for a
-- workflow whose jobs are all deleted. The page is one range of
-- workflows_by_time (filtered by name when one is given); each listed
-- workflow's jobs are one range of jobs_workflow.
WITH page AS (
    SELECT w.id, w.name, w.created_at FROM workflows AS w
    WHERE (sqlc.narg(name)::text IS NULL OR w.name = sqlc.narg(name))
        -- No cursor compares with a key above every row's; an unknown one
        -- with null, which no row passes.
        AND (w.created_at, w.id) < (
            coalesce((SELECT b.created_at FROM workflows AS b WHERE b.id = sqlc.narg(before)),
                CASE WHEN sqlc.narg(before)::text IS NULL THEN 'infinity'::timestamptz END),
            coalesce((SELECT b.id FROM workflows AS b WHERE b.id = sqlc.narg(before)),
                CASE WHEN sqlc.narg(before)::text IS NULL THEN '' END))
    ORDER BY w.created_at DESC, w.id DESC
    LIMIT @max_workflows
)
SELECT page.id, page.name, page.created_at, jobs.status, count(jobs.id) AS jobs
FROM page LEFT JOIN jobs ON jobs.workflow_id = page.id
GROUP BY page.id, page.name, page.created_at, jobs.status
ORDER BY page.created_at DESC, page.id DESC;

-- name: DeleteEmptyWorkflows :execrows
-- DeleteEmptyWorkflows deletes up to max_workflows workflows created before
-- before whose jobs are all deleted, oldest first: pruning takes a
-- workflow's row after its last job. It reads a range of workflows_by_time
-- and each one's first entry of jobs_workflow, skipping rows another
-- runner's maintenance is deleting.
DELETE FROM workflows WHERE id IN (
    SELECT w.id FROM workflows AS w
    WHERE w.created_at < @before
        AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.workflow_id = w.id)
    ORDER BY w.created_at LIMIT @max_workflows
    FOR UPDATE SKIP LOCKED
);

-- name: ListOverdueWorkflows :many
-- ListOverdueWorkflows lists up to max_workflows workflows whose deadline
-- passed by now and was not yet acted on, earliest first
-- (workflows_deadlines).
SELECT id FROM workflows
WHERE deadline_at IS NOT NULL AND NOT deadline_done AND deadline_at <= @now
ORDER BY deadline_at
LIMIT @max_workflows;

-- name: MarkDeadlineDone :exec
-- MarkDeadlineDone records that the maintenance acted on a workflow's
-- deadline: its deadline never cancels anything again (a retried job runs).
UPDATE workflows SET deadline_done = true WHERE id = @id;
