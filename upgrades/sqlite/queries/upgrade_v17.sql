-- The step from schema version 16 to 17, run in the one transaction that
-- records the new version: the workflows table's concurrency and slot
-- columns (the step creates the index of the workflows holding or waiting
-- for a slot and the triggers that free and admit them from schema.sql).
-- The columns are nullable, so adding them rewrites no row: every workflow
-- is kept, with no limit.

-- name: AddWorkflowConcurrencyColumnV17 :exec
ALTER TABLE workflows ADD COLUMN concurrency INTEGER
    CHECK (concurrency IS NULL OR concurrency >= 1);

-- name: AddWorkflowSlotColumnV17 :exec
ALTER TABLE workflows ADD COLUMN slot TEXT;
