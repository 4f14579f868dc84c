-- The step from schema version 2 to 3, run in the one transaction that
-- records the new version. Every job is kept, not unique and with no trace
-- context. sqlc checks these against the latest schema, so their statements
-- name only its columns.

-- name: AddUniqueAndTraceColumnsV3 :exec
ALTER TABLE jobs
    ADD COLUMN unique_key text,
    ADD COLUMN unique_statuses integer CHECK (
        (unique_statuses IS NULL) = (unique_key IS NULL)
        AND (unique_statuses IS NULL OR ((unique_statuses & 3) = 3 AND unique_statuses < 32))
    ),
    ADD COLUMN traceparent text;

-- name: CreateJobsUniqueIndexV3 :exec
CREATE UNIQUE INDEX jobs_unique ON jobs (kind, unique_key)
    WHERE unique_key IS NOT NULL AND (unique_statuses & CASE status
        WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
        WHEN 'failed' THEN 8 ELSE 16 END) <> 0;

-- name: CreateJobsByStatusIndexV3 :exec
CREATE INDEX jobs_by_status ON jobs (status, seq) WHERE status <> 'running';

-- name: CreateJobsByStatusKindIndexV3 :exec
CREATE INDEX jobs_by_status_kind ON jobs (status, kind, seq) WHERE status <> 'running';

-- name: CreateJobsByStatusQueueIndexV3 :exec
CREATE INDEX jobs_by_status_queue ON jobs (status, queue, seq) WHERE status <> 'running';
