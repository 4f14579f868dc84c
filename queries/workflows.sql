-- The workflows' queries: jobs with dependencies. A job of a workflow that
-- waits for dependencies is pending, which no claim reads; these statements
-- run in the transaction that records each dependency's outcome (only when
-- the finished job belongs to a workflow), so nothing outside the database
-- remembers that a job waits for another.

-- name: CreateWorkflow :one
-- CreateWorkflow names a new workflow, with its deadline or none, and its
-- concurrency limit or none, and returns its slot: null without a limit;
-- 'held' when the held workflows of its name leave room, else 'waiting':
-- its jobs then wait for admission (an end admits the waiting ones while
-- there is room, in its transaction, so none waits while there is room).
INSERT INTO workflows (id, name, created_at, deadline_at, concurrency, slot)
VALUES (@id, @name, @now, sqlc.narg(deadline_at), sqlc.narg(concurrency),
    CASE WHEN CAST(sqlc.narg(concurrency) AS INTEGER) IS NULL THEN NULL
        WHEN (SELECT count(*) FROM workflows AS h WHERE h.name = @name AND h.slot = 'held')
                >= CAST(sqlc.narg(concurrency) AS INTEGER)
        THEN 'waiting' ELSE 'held' END)
RETURNING slot;

-- name: RetakeWorkflowSlot :exec
-- RetakeWorkflowSlot makes a limited workflow whose slot was freed hold one
-- again: a job that ended last added jobs to it as it succeeded.
UPDATE workflows SET slot = 'held' WHERE id = @id AND slot = 'freed';

-- name: GetWorkflow :one
-- GetWorkflow reads a workflow's name, and its slot (null: no concurrency
-- limit).
SELECT id, name, created_at, slot FROM workflows WHERE id = @id;

-- name: LockWorkflow :one
-- LockWorkflow reads a workflow's id, for a cancel of the workflow: no
-- running job of it records a success with jobs added to it until the
-- cancel commits (see HoldWorkflow). Differs by necessity from PostgreSQL,
-- which locks the row (FOR UPDATE): SQLite has no row locks, and needs
-- none, since its write transactions hold the database's one write lock
-- from their start.
SELECT id FROM workflows WHERE id = @id;

-- name: HoldWorkflow :one
-- HoldWorkflow reads a workflow's id, for a write that records a job's
-- success with the jobs its handler added to the workflow, before it
-- records the success: a cancel of the workflow then comes wholly before
-- or wholly after it. Differs by necessity from PostgreSQL as LockWorkflow
-- does.
SELECT id FROM workflows WHERE id = @id;

-- name: CreateWorkflowJobs :batchexec
-- CreateWorkflowJobs stores jobs of workflow_id, one statement per row, all
-- sent at once: each pending while pending_deps (its dependencies, stored
-- with CreateJobDeps) is above 0, else queued.
INSERT INTO jobs (
    id, kind, queue, priority, payload, max_attempts, timeout, run_at, scheduled,
    created_at, updated_at, traceparent, partition_key, sequence_key, sequence_blocks,
    tags, meta, workflow_id, pending_deps, status, partition_by, sequence_by
)
VALUES (
    @id, @kind, @queue, @priority, @payload, @max_attempts, @timeout, @run_at, @run_at > @now,
    @now, @now, sqlc.narg(traceparent), sqlc.narg(partition_key), sqlc.narg(sequence_key),
    @sequence_blocks, @tags, sqlc.narg(meta), @workflow_id, @pending_deps,
    CASE WHEN @pending_deps > 0 THEN 'pending' ELSE 'queued' END,
    sqlc.narg(partition_by), sqlc.narg(sequence_by)
);

-- name: CancelAddedJobs :execrows
-- CancelAddedJobs cancels the jobs of ids (a JSON array of their ids), which
-- the handler of adder added to its workflow and which were just stored
-- with adder's success, when adder's cancel was requested before that
-- success was recorded (a cancel of adder, or of its workflow): none of
-- them ever runs, and the record shows them, cancelled.
UPDATE jobs SET status = 'cancelled', finished_at = @now, updated_at = @now
WHERE id IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
    AND (status = 'queued' OR status = 'pending')
    AND EXISTS (SELECT 1 FROM jobs AS adder WHERE adder.id = @adder AND adder.cancel_requested);

-- name: HandOverDependents :exec
-- HandOverDependents makes heir, a job that job's handler added with job's
-- success, a dependency of each of job's dependents not started (a job of
-- ids, the added ones, aside): each waits for heir as it waited for job,
-- and one that job fed takes heir's result instead. CountHandedOver follows
-- in the same transaction.
INSERT INTO job_deps (dep, job, run_on_failure, feeds)
SELECT @heir, d.job, d.run_on_failure, d.feeds
FROM job_deps AS d JOIN jobs ON jobs.id = d.job
WHERE d.dep = @job AND jobs.status IN ('queued', 'pending')
    AND d.job NOT IN (SELECT value FROM json_each(CAST(@ids AS TEXT)));

-- name: CountHandedOver :exec
-- CountHandedOver counts heir among the dependencies of each job that
-- HandOverDependents gave it (a job of ids, the added ones, aside): one
-- that was queued waits, pending, until heir ends.
UPDATE jobs SET pending_deps = pending_deps + 1, status = 'pending', updated_at = @now
WHERE id IN (
    SELECT d.job FROM job_deps AS d
    WHERE d.dep = @heir AND d.job NOT IN (SELECT value FROM json_each(CAST(@ids AS TEXT)))
) AND status IN ('queued', 'pending');

-- name: CreateJobDeps :batchexec
-- CreateJobDeps records, a statement per row, that job runs only after dep
-- finished: after it succeeded, or after any end with run_on_failure.
-- feeds: dep's result becomes job's payload.
INSERT INTO job_deps (dep, job, run_on_failure, feeds)
VALUES (@dep, @job, @run_on_failure, @feeds);

-- name: GetDepState :one
-- GetDepState reads what a dependency's dependents need to know of it.
SELECT status, workflow_id FROM jobs WHERE id = @id;

-- name: FeedDependents :execrows
-- FeedDependents makes dep's result the payload of each pending job it
-- feeds; run before ReleaseDependents, which makes them ready. A fed job
-- whose kind keys it by a payload field (partition_by, sequence_by) gets
-- its key from the result as an enqueue computes it: the field's string,
-- the JSON text of another value, null when the result lacks the field or
-- holds an empty string. One it gives a sequence_by joins its sequence now:
-- it takes a new seq, the enqueue order's last (the subquery is correlated,
-- so each row's is read after the previous row took its own).
UPDATE jobs
SET payload = (SELECT dep.result FROM jobs AS dep WHERE dep.id = @dep),
    partition_key = CASE WHEN partition_by IS NULL THEN partition_key ELSE (
        SELECT nullif(CASE field.type WHEN 'text' THEN field.value WHEN 'true' THEN 'true'
                WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'
                ELSE CAST(field.value AS TEXT) END, '')
        FROM json_each((SELECT dep.result FROM jobs AS dep WHERE dep.id = @dep)) AS field
        WHERE field.key = jobs.partition_by
    ) END,
    sequence_key = CASE WHEN sequence_by IS NULL THEN sequence_key ELSE (
        SELECT nullif(CASE field.type WHEN 'text' THEN field.value WHEN 'true' THEN 'true'
                WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'
                ELSE CAST(field.value AS TEXT) END, '')
        FROM json_each((SELECT dep.result FROM jobs AS dep WHERE dep.id = @dep)) AS field
        WHERE field.key = jobs.sequence_by
    ) END,
    seq = CASE WHEN sequence_by IS NULL THEN seq
        ELSE (SELECT max(last.seq) FROM jobs AS last WHERE last.seq >= jobs.seq) + 1 END
WHERE id IN (SELECT job FROM job_deps WHERE dep = @dep AND feeds = 1 AND done = 0)
    AND status = 'pending';

-- name: ReleaseDependents :execrows
-- ReleaseDependents counts dep's end for each dependent it counts for (any
-- dependent when it succeeded, else those with run_on_failure) and not yet
-- counted: a pending job whose count reaches 0 is queued, ready at once or
-- at its run_at. MarkDepsDone must follow in the same transaction. Until
-- then only pending_deps changes, which no index holds: on PostgreSQL the
-- update of a wide fan-in's row stays HOT, adding no index entry at each of
-- its dependencies' ends.
UPDATE jobs
SET pending_deps = pending_deps - 1,
    status = CASE WHEN status = 'pending' AND pending_deps = 1 THEN 'queued' ELSE status END,
    scheduled = CASE WHEN status = 'pending' AND pending_deps = 1 THEN run_at > @now
        ELSE scheduled END,
    updated_at = CASE WHEN status = 'pending' AND pending_deps = 1 THEN @now ELSE updated_at END
WHERE id IN (
    SELECT job FROM job_deps
    WHERE dep = @dep AND done = 0 AND (CAST(@succeeded AS INTEGER) = 1 OR run_on_failure = 1)
);

-- name: MarkDepsDone :exec
-- MarkDepsDone records that ReleaseDependents counted dep's end, so no end
-- of dep (a retried dep ends again) counts twice.
UPDATE job_deps SET done = 1
WHERE dep = @dep AND done = 0 AND (CAST(@succeeded AS INTEGER) = 1 OR run_on_failure = 1);

-- name: CancelDependents :many
-- CancelDependents cancels the pending jobs that need dep to succeed, which
-- it did not, recording dep as the reason, and returns their ids: their own
-- dependents follow.
UPDATE jobs
SET status = 'cancelled', blocked_by = @dep, finished_at = @now, updated_at = @now
WHERE id IN (SELECT job FROM job_deps WHERE dep = @dep AND done = 0 AND run_on_failure = 0)
    AND status = 'pending'
RETURNING id;

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
WHERE job_deps.job = @job AND job_deps.done = 0 AND job_deps.run_on_failure = 0
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
UPDATE jobs SET cancel_requested = 1, updated_at = @now
WHERE workflow_id = @workflow_id AND status = 'running';

-- name: ListStrandedDeps :many
-- ListStrandedDeps lists the ended dependencies whose end a pending job has
-- not counted: the writes that end jobs in bulk (an interrupt that fails a
-- job at its last attempt, a bulk cancel) settle their dependents through
-- it. It reads the pending jobs only (jobs_by_rare_status, which needs its
-- condition in the query to be chosen).
SELECT DISTINCT d.dep FROM jobs AS waiting
JOIN job_deps AS d ON d.job = waiting.id
JOIN jobs AS ended ON ended.id = d.dep
WHERE waiting.status = 'pending'
    AND (waiting.status = 'failed' OR waiting.status = 'cancelled' OR waiting.status = 'pending')
    AND d.done = 0
    AND (ended.status = 'succeeded' OR ended.status = 'failed' OR ended.status = 'cancelled');

-- name: ReopenDependencies :exec
-- ReopenDependencies makes a retried job of a workflow wait again for each
-- dependency whose counted end an operator has since undone (it was retried
-- too, and is queued, pending or running): that edge counts again, and
-- CountPendingDeps follows in the same transaction.
UPDATE job_deps SET done = 0
WHERE job = @job AND done = 1
    AND dep IN (SELECT id FROM jobs WHERE status IN ('queued', 'pending', 'running'));

-- name: CountPendingDeps :exec
-- CountPendingDeps sets a retried job's count of dependencies not yet
-- counted (and the slot its workflow waits for, if it waits for one), and
-- makes it pending while one remains, queued when none does: a job is never
-- pending with nothing left to wait for.
UPDATE jobs
SET pending_deps = (SELECT count(*) FROM job_deps WHERE job_deps.job = jobs.id AND done = 0)
        + (SELECT count(*) FROM workflows
            WHERE workflows.id = jobs.workflow_id AND slot = 'waiting'),
    status = CASE WHEN status NOT IN ('queued', 'pending') THEN status
        WHEN EXISTS (SELECT 1 FROM job_deps WHERE job_deps.job = jobs.id AND done = 0)
            OR EXISTS (SELECT 1 FROM workflows
                WHERE workflows.id = jobs.workflow_id AND slot = 'waiting')
        THEN 'pending' ELSE 'queued' END
WHERE jobs.id = @id;

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
WHERE id IN (SELECT job FROM job_deps WHERE dep = @dep AND done = 0);

-- name: ReopenDependents :exec
-- ReopenDependents makes the jobs that counted dep's end, and have not
-- started since, wait for its new end: dep was retried. ReopenDepEdges
-- follows in the same transaction.
UPDATE jobs
SET pending_deps = pending_deps + 1, status = 'pending', updated_at = @now
WHERE status IN ('queued', 'pending')
    AND id IN (SELECT job FROM job_deps WHERE dep = @dep AND done = 1);

-- name: ReopenDepEdges :exec
-- ReopenDepEdges uncounts dep's end for the jobs ReopenDependents reopened.
UPDATE job_deps SET done = 0
WHERE dep = @dep AND done = 1
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
    WHERE (CAST(sqlc.narg(name) AS TEXT) IS NULL OR w.name = sqlc.narg(name))
        -- No cursor compares with a key above every row's; an unknown one
        -- with null, which no row passes.
        AND (w.created_at, w.id) < (
            coalesce((SELECT b.created_at FROM workflows AS b WHERE b.id = sqlc.narg(before)),
                CASE WHEN CAST(sqlc.narg(before) AS TEXT) IS NULL THEN '9999' END),
            coalesce((SELECT b.id FROM workflows AS b WHERE b.id = sqlc.narg(before)),
                CASE WHEN CAST(sqlc.narg(before) AS TEXT) IS NULL THEN '' END))
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
-- and each one's first entry of jobs_workflow.
DELETE FROM workflows WHERE id IN (
    SELECT w.id FROM workflows AS w
    WHERE w.created_at < @before
        AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.workflow_id = w.id)
    ORDER BY w.created_at LIMIT @max_workflows
);

-- name: ListOverdueWorkflows :many
-- ListOverdueWorkflows lists up to max_workflows workflows whose deadline
-- passed by now and was not yet acted on, earliest first
-- (workflows_deadlines).
SELECT id FROM workflows
WHERE deadline_at IS NOT NULL AND deadline_done = 0 AND deadline_at <= @now
ORDER BY deadline_at
LIMIT @max_workflows;

-- name: MarkDeadlineDone :exec
-- MarkDeadlineDone records that the maintenance acted on a workflow's
-- deadline: its deadline never cancels anything again (a retried job runs).
UPDATE workflows SET deadline_done = 1 WHERE id = @id;
