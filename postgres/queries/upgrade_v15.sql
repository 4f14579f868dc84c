-- The step to schema version 15, run in the one transaction that records the
-- new version: the jobs table's published and debounce_key columns, then
-- jobs_debounce. A column with a constant default, or none, is added without
-- rewriting a row: every job is kept, has published no partial result and
-- holds no debounce key, so the new index starts empty. Each statement may
-- run again on a schema that has what it makes.

-- name: AddPublishedColumnV15 :exec
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS published integer NOT NULL DEFAULT 0;

-- name: AddDebounceKeyColumnV15 :exec
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS debounce_key text;

-- name: CreateDebounceIndexV15 :exec
CREATE UNIQUE INDEX IF NOT EXISTS jobs_debounce ON jobs (kind, debounce_key)
    WHERE debounce_key IS NOT NULL AND status = 'queued' AND attempt = 0;
