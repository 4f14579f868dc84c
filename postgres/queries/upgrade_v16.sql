-- The step from schema version 12 to 16, run in the one transaction that
-- records the new version: the workflows table's deadline_at and
-- deadline_done columns, and the index of deadlines not yet passed. The
-- columns are nullable or have a constant default, so adding them rewrites
-- no row: every workflow is kept, with no deadline. A schema whose
-- workflows table has them already (made from a later schema.sql) is kept.

-- name: AddWorkflowDeadlineColumnsV16 :exec
ALTER TABLE workflows ADD COLUMN IF NOT EXISTS deadline_at timestamptz,
    ADD COLUMN IF NOT EXISTS deadline_done boolean NOT NULL DEFAULT false;

-- name: CreateWorkflowDeadlinesIndexV16 :exec
CREATE INDEX IF NOT EXISTS workflows_deadlines ON workflows (deadline_at)
WHERE deadline_at IS NOT NULL AND NOT deadline_done;
