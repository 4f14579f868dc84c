-- name: LockSchema :exec
-- LockSchema holds, until the transaction ends, the lock that serializes
-- processes applying or upgrading the schema of the current schema.
SELECT pg_advisory_xact_lock(1785688164, hashtext(current_schema()));

-- name: SchemaApplied :one
-- SchemaApplied tells whether the current schema has a jobtable_schema table.
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_tables
    WHERE schemaname = current_schema() AND tablename = 'jobtable_schema'
) AS applied;

-- name: GetSchemaVersion :one
SELECT version FROM jobtable_schema;

-- name: SetSchemaVersion :exec
INSERT INTO jobtable_schema (version) VALUES (@version)
ON CONFLICT (singleton) DO UPDATE SET version = excluded.version;

-- name: ListenForEnqueues :one
-- ListenForEnqueues makes this session LISTEN for enqueues into the current
-- schema; a session in autocommit mode listens at once.
SELECT jobtable_listen() AS channel;

-- name: DisableSynchronousCommit :exec
-- DisableSynchronousCommit makes this session's commits return before they
-- reach the disk: a crash may lose the last moments' writes, never corrupt.
SELECT set_config('synchronous_commit', 'off', false);

-- name: SetClientEncoding :exec
-- SetClientEncoding sets the encoding this session's text travels in.
SELECT set_config('client_encoding', @encoding::text, false);
