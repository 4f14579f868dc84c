-- The step from schema version 7 to 8, run in the one transaction that
-- records the new version: the pending status, the jobs table's workflow
-- columns (nullable, or with a constant default, so adding them rewrites no
-- row), then workflows and job_deps, as postgres/schema.sql has them. Every
-- job is kept, in no workflow.

-- name: AllowPendingStatusV8 :exec
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check,
    ADD CONSTRAINT jobs_status_check
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'pending'));

-- name: AddWorkflowColumnsV8 :exec
ALTER TABLE jobs ADD COLUMN workflow_id text,
    ADD COLUMN pending_deps integer NOT NULL DEFAULT 0,
    ADD COLUMN blocked_by text;

-- name: CreateJobsWorkflowIndexV8 :exec
CREATE INDEX jobs_workflow ON jobs (workflow_id, seq) WHERE workflow_id IS NOT NULL;

-- name: CreateWorkflowsTableV8 :exec
CREATE TABLE workflows (
    id text PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL
);

-- name: CreateJobDepsTableV8 :exec
CREATE TABLE job_deps (
    dep text NOT NULL,
    job text NOT NULL,
    run_on_failure boolean NOT NULL DEFAULT false,
    feeds boolean NOT NULL DEFAULT false,
    done boolean NOT NULL DEFAULT false,
    PRIMARY KEY (dep, job)
);

-- name: CreateJobDepsJobIndexV8 :exec
CREATE INDEX job_deps_job ON job_deps (job);

-- name: CreateDeleteDepsFunctionV8 :exec
CREATE FUNCTION jobtable_delete_deps() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_deps USING deleted
    WHERE deleted.workflow_id IS NOT NULL AND job_deps.job = deleted.id;
    DELETE FROM job_deps USING deleted
    WHERE deleted.workflow_id IS NOT NULL AND job_deps.dep = deleted.id;
    RETURN NULL;
END
$$;

-- name: CreateDeleteDepsTriggerV8 :exec
CREATE TRIGGER jobs_delete_deps AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_delete_deps();
