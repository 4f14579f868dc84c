-- The step from schema version 4 to 5, run in the one transaction that
-- records the new version: the runners table's host and process, nullable
-- columns, so adding them rewrites no row. A runner registered before the
-- upgrade has neither, so only its lease judges it until it registers again.

-- name: AddRunnerProcessColumnsV5 :exec
ALTER TABLE runners ADD COLUMN host text, ADD COLUMN process text;
