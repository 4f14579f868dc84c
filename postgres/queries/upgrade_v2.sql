-- The step from schema version 1 to 2, run in the one transaction that
-- records the new version. Every job is kept. sqlc checks these against the
-- latest schema, so their statements name only its columns.

-- name: AddJobOptionColumnsV2 :exec
ALTER TABLE jobs
    ADD COLUMN queue text NOT NULL DEFAULT 'default',
    ADD COLUMN priority integer NOT NULL DEFAULT 0,
    ADD COLUMN errors text NOT NULL DEFAULT '[]',
    ADD COLUMN max_attempts integer NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    ADD COLUMN timeout double precision CHECK (timeout IS NULL OR timeout > 0),
    ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false,
    ADD COLUMN run_at timestamptz,
    ADD COLUMN scheduled boolean NOT NULL DEFAULT false,
    ADD COLUMN started_at timestamptz,
    ADD COLUMN finished_at timestamptz;

-- name: FillJobOptionColumnsV2 :exec
-- FillJobOptionColumnsV2 gives each kept job its times: runnable from its
-- creation, started when last claimed, finished when it last changed; a failed
-- job's error is its first history entry.
UPDATE jobs SET
    run_at = created_at,
    started_at = CASE WHEN attempt > 0 THEN updated_at END,
    finished_at = CASE WHEN status IN ('succeeded', 'failed') THEN updated_at END,
    errors = CASE WHEN status = 'failed'
        THEN jsonb_build_array(jsonb_build_object(
            'attempt', attempt, 'error', error, 'at', updated_at
        ))::text
        ELSE '[]'
    END;

-- name: RequireRunAtV2 :exec
ALTER TABLE jobs ALTER COLUMN run_at SET NOT NULL;

-- name: AllowCancelledStatusV2 :exec
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check,
    ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled'));

-- name: DropJobIndexesV1 :exec
-- DropJobIndexesV1 is a DO block because sqlc leaves out a plain DROP INDEX.
DO $$ BEGIN
    DROP INDEX jobs_queued;
    DROP INDEX jobs_finished;
END $$;

-- name: CreateJobsQueuedIndexV2 :exec
CREATE INDEX jobs_queued ON jobs (queue, priority, seq)
    WHERE status = 'queued' AND scheduled = false;

-- name: CreateJobsScheduledIndexV2 :exec
CREATE INDEX jobs_scheduled ON jobs (queue, run_at)
    WHERE status = 'queued' AND scheduled = true;

-- name: CreateJobsFinishedIndexV2 :exec
CREATE INDEX jobs_finished ON jobs (updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
