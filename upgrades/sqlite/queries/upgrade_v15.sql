-- The step to schema version 15, run in the one transaction that records the
-- new version: the jobs table's published and debounce_key columns, added in
-- place (no row is rewritten: every job keeps its columns, has published no
-- partial result and holds no debounce key), then jobs_debounce.

-- name: AddPublishedColumnV15 :exec
ALTER TABLE jobs ADD COLUMN published INTEGER NOT NULL DEFAULT 0;

-- name: AddDebounceKeyColumnV15 :exec
ALTER TABLE jobs ADD COLUMN debounce_key TEXT;
