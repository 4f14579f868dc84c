-- The step from schema version 11 to 12, run in the one transaction that
-- records the new version: the runners table's missing_keys column. It is
-- nullable, so adding it rewrites no row: every runner is kept, having
-- reported no missing key.

-- name: AddRunnerMissingKeysColumnV12 :exec
ALTER TABLE runners ADD COLUMN missing_keys TEXT;
