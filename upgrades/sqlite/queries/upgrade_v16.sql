-- The step from schema version 12 to 16, run in the one transaction that
-- records the new version: the workflows table's deadline_at and
-- deadline_done columns (the step creates the index of deadlines not yet
-- passed from schema.sql). The
-- columns are nullable or have a constant default, so adding them rewrites
-- no row: every workflow is kept, with no deadline.

-- name: AddWorkflowDeadlineColumnV16 :exec
ALTER TABLE workflows ADD COLUMN deadline_at TEXT;

-- name: AddWorkflowDeadlineDoneColumnV16 :exec
ALTER TABLE workflows ADD COLUMN deadline_done INTEGER NOT NULL DEFAULT 0;
