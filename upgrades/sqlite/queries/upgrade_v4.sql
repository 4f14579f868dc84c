-- The step from schema version 3 to 4: the runners table's host and process,
-- nullable columns added in place, in the one transaction that records the
-- new version. A runner registered before the upgrade has neither, so only
-- its lease judges it until it registers again.

-- name: AddRunnerHostColumnV4 :exec
ALTER TABLE runners ADD COLUMN host TEXT;

-- name: AddRunnerProcessColumnV4 :exec
ALTER TABLE runners ADD COLUMN process TEXT;
