-- The step from schema version 3 to 4, flow control: nullable columns (and
-- one with a default), added in place, then the schema's new indexes and
-- tables (schema.sql's statements), all in the one transaction that records
-- the new version. Every job is kept, in no partition and no sequence; every
-- queue is without a row, so it has no limit and is not paused.

-- name: AddPartitionKeyColumnV4 :exec
ALTER TABLE jobs ADD COLUMN partition_key TEXT;

-- name: AddSequenceKeyColumnV4 :exec
ALTER TABLE jobs ADD COLUMN sequence_key TEXT;

-- name: AddSequenceBlocksColumnV4 :exec
ALTER TABLE jobs ADD COLUMN sequence_blocks INTEGER NOT NULL DEFAULT 0;
