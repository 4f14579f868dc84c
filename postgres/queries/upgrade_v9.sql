-- The step from schema version 8 to 9, run in the one transaction that
-- records the new version: the jobs table's run_trace column. It is
-- nullable, so adding it rewrites no row. Every job is kept, with no run
-- trace.

-- name: AddRunTraceColumnV9 :exec
ALTER TABLE jobs ADD COLUMN run_trace text;
