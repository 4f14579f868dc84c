-- The step from schema version 4 to 5: the runners table's host and process,
-- nullable columns added in place, in the one transaction that records the
-- new version. A runner registered before the upgrade has neither, so only
-- its lease judges it until it registers again.

-- name: AddRunnerHostColumnV5 :exec
ALTER TABLE runners ADD COLUMN host TEXT;

-- name: AddRunnerProcessColumnV5 :exec
ALTER TABLE runners ADD COLUMN process TEXT;
