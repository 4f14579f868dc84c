-- The step to schema version 10, run in the one transaction that records the
-- new version: the listing's jobs_by_status, which every finish wrote an
-- entry in, gives way to jobs_by_rare_status, which only a job that fails,
-- is cancelled or waits for dependencies enters, and the planner gets the
-- statistics of status, kind and queue together. Every job is kept. Each
-- statement does nothing the second time it runs.

-- name: DropJobsByStatusIndexV10 :exec
-- DropJobsByStatusIndexV10 is a DO block because sqlc leaves out a plain DROP INDEX.
DO $$ BEGIN
    DROP INDEX IF EXISTS jobs_by_status;
END $$;

-- name: CreateJobsByRareStatusIndexV10 :exec
CREATE INDEX IF NOT EXISTS jobs_by_rare_status ON jobs (status, seq)
    WHERE status IN ('failed', 'cancelled', 'pending');

-- name: CreateJobsListingStatisticsV10 :exec
CREATE STATISTICS IF NOT EXISTS jobs_listing (mcv) ON status, kind, queue FROM jobs;

-- name: CreateWorkflowsByTimeIndexV10 :exec
CREATE INDEX IF NOT EXISTS workflows_by_time ON workflows (created_at, id);
