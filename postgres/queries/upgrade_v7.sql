-- The step from schema version 6 to 7, run in the one transaction that
-- records the new version: job_steps, and the jobs table's delete trigger
-- that deletes a job's steps with it, as postgres/schema.sql has them.
-- Every job is kept, with no step.

-- name: CreateJobStepsTableV7 :exec
CREATE TABLE job_steps (
    job_id text NOT NULL,
    name text NOT NULL,
    output text NOT NULL,
    recorded_at timestamptz NOT NULL,
    attempt integer NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- name: CreateDeleteStepsFunctionV7 :exec
CREATE FUNCTION jobtable_delete_steps() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_steps USING deleted WHERE job_steps.job_id = deleted.id;
    RETURN NULL;
END
$$;

-- name: CreateDeleteStepsTriggerV7 :exec
CREATE TRIGGER jobs_delete_steps AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_delete_steps();
