-- The step from schema version 3 to 4, run in the one transaction that
-- records the new version: the runners table's host and process, nullable
-- columns, so adding them rewrites no row. A runner registered before the
-- upgrade has neither, so only its lease judges it until it registers again.

-- name: AddRunnerProcessColumnsV4 :exec
ALTER TABLE runners ADD COLUMN host text, ADD COLUMN process text;
