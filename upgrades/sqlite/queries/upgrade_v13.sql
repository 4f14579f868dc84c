-- The step from schema version 12 to 13, run in the one transaction that
-- records the new version: the jobs table's partition_by and sequence_by,
-- nullable, so adding them rewrites no row; then the trigger that moves a
-- job's tags with its seq, from schema.sql. Every job is kept, keyed as it
-- was.

-- name: AddPartitionByColumnV13 :exec
ALTER TABLE jobs ADD COLUMN partition_by TEXT;

-- name: AddSequenceByColumnV13 :exec
ALTER TABLE jobs ADD COLUMN sequence_by TEXT;
