-- The step to schema version 14, run in the one transaction that records the
-- new version: signals and job_waits (durable waiting), and the jobs table's
-- delete trigger that deletes a job's wait with it, as postgres/schema.sql
-- has them. Every job is kept, waiting for nothing. Each statement may run
-- again on a schema that has what it makes.

-- name: CreateSignalsTableV14 :exec
CREATE TABLE IF NOT EXISTS signals (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    key text NOT NULL,
    payload text NOT NULL,
    sent_at timestamptz NOT NULL
);

-- name: CreateSignalsByKeyIndexV14 :exec
CREATE INDEX IF NOT EXISTS signals_by_key ON signals (name, key, id);

-- name: CreateSignalsByTimeIndexV14 :exec
CREATE INDEX IF NOT EXISTS signals_by_time ON signals (sent_at);

-- name: CreateJobWaitsTableV14 :exec
CREATE TABLE IF NOT EXISTS job_waits (
    job_id text PRIMARY KEY,
    position integer NOT NULL,
    name text NOT NULL,
    key text NOT NULL,
    after_id bigint NOT NULL,
    deadline timestamptz,
    since timestamptz NOT NULL
);

-- name: CreateJobWaitsByKeyIndexV14 :exec
CREATE INDEX IF NOT EXISTS job_waits_by_key ON job_waits (name, key);

-- name: CreateDeleteWaitsFunctionV14 :exec
CREATE OR REPLACE FUNCTION jobtable_delete_waits() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_waits USING deleted WHERE job_waits.job_id = deleted.id;
    RETURN NULL;
END
$$;

-- name: CreateDeleteWaitsTriggerV14 :exec
CREATE OR REPLACE TRIGGER jobs_delete_waits AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_delete_waits();
