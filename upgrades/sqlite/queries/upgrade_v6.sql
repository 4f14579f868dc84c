-- The step from schema version 5 to 6: the jobs table's tags and meta,
-- columns added in place (tags with a constant default, so no row is
-- rewritten), in the one transaction that records the new version; then
-- job_tags, its index and the triggers that fill it, from schema.sql. Every
-- job is kept, with no tag and no meta.

-- name: AddJobTagsColumnV6 :exec
ALTER TABLE jobs ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';

-- name: AddJobMetaColumnV6 :exec
ALTER TABLE jobs ADD COLUMN meta TEXT;
