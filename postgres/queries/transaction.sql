-- name: GetJobsTable :one
-- GetJobsTable identifies the jobs table an unqualified "jobs" names on this
-- session: the server (its system identifier), the database, the table's oid
-- (0 when the search_path finds none) and the schema it is in. An enqueue on
-- an application's own connection compares it with the store's, so that it
-- never inserts into another database, or another schema's jobs table.
SELECT
    (SELECT system_identifier FROM pg_control_system())::bigint AS server_id,
    current_database()::text AS database_name,
    COALESCE(to_regclass('jobs')::oid::bigint, 0)::bigint AS table_oid,
    COALESCE((
        SELECT n.nspname::text FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE c.oid = to_regclass('jobs')
    ), '')::text AS table_schema;
