-- The step to schema version 10, run in the one transaction that records the
-- new version: the listing's jobs_by_status, which every finish wrote an
-- entry in, gives way to jobs_by_rare_status, which only a job that fails,
-- is cancelled or waits for dependencies enters. Every job is kept. Both
-- statements do nothing the second time they run.

-- name: DropJobsByStatusIndexV10 :exec
-- DropJobsByStatusIndexV10 is a DO block because sqlc leaves out a plain DROP INDEX.
DO $$ BEGIN
    DROP INDEX IF EXISTS jobs_by_status;
END $$;

-- name: CreateJobsByRareStatusIndexV10 :exec
CREATE INDEX IF NOT EXISTS jobs_by_rare_status ON jobs (status, seq)
    WHERE status IN ('failed', 'cancelled', 'pending');
