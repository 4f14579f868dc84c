-- The step from schema version 3 to 4, flow control, run in the one
-- transaction that records the new version. Every job is kept, in no
-- partition and no sequence; every queue is without a row, so it has no
-- limit and is not paused. sqlc checks these against the latest schema, so
-- their statements name only its columns.

-- name: AddFlowColumnsV4 :exec
ALTER TABLE jobs
    ADD COLUMN partition_key text,
    ADD COLUMN sequence_key text,
    ADD COLUMN sequence_blocks boolean NOT NULL DEFAULT false;

-- name: CreateJobsPartitionIndexV4 :exec
CREATE INDEX jobs_partition ON jobs (queue, partition_key, priority, seq)
    WHERE status = 'queued' AND scheduled = false AND partition_key IS NOT NULL;

-- name: CreateJobsSequenceIndexV4 :exec
CREATE INDEX jobs_sequence ON jobs (sequence_key, seq)
    WHERE sequence_key IS NOT NULL AND status <> 'succeeded';

-- name: CreateQueuesTableV4 :exec
CREATE TABLE queues (
    name text PRIMARY KEY,
    paused boolean NOT NULL DEFAULT false,
    concurrency integer CHECK (concurrency IS NULL OR concurrency >= 1),
    partition_limit integer CHECK (partition_limit IS NULL OR partition_limit >= 1),
    rate_limit integer CHECK (rate_limit IS NULL OR rate_limit >= 1),
    rate_period double precision CHECK (rate_period IS NULL OR rate_period > 0),
    rate_per_key boolean NOT NULL DEFAULT false,
    declared_concurrency integer,
    declared_partition_limit integer,
    declared_rate_limit integer,
    declared_rate_period double precision,
    declared_rate_per_key boolean NOT NULL DEFAULT false,
    overridden boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL,
    CHECK ((rate_limit IS NULL) = (rate_period IS NULL))
);

-- name: CreateQueueStartsTableV4 :exec
CREATE TABLE queue_starts (
    queue text NOT NULL,
    partition_key text,
    started_at timestamptz NOT NULL
);

-- name: CreateQueueStartsIndexV4 :exec
CREATE INDEX queue_starts_by_time ON queue_starts (queue, started_at);
