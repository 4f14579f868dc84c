-- The step from schema version 10 to 11, run in the one transaction that
-- records the new version: the jobs table's autovacuum parameters, as
-- postgres/schema.sql sets them. Setting them rewrites no row and blocks no
-- read or write of the table (SHARE UPDATE EXCLUSIVE).

-- name: SetJobsAutovacuumV11 :exec
ALTER TABLE jobs SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.02
);
