-- name: LiftStatementTimeout :exec
-- LiftStatementTimeout lifts, until the transaction ends, the statement_timeout
-- a role or the server may set: the transaction that applies or upgrades the
-- schema waits for another process's (the lock of LockSchema) and may rewrite
-- a large table, and a statement ended halfway would only make the process's
-- open fail. A statement of its own: a timeout counts from the start of the
-- statement that would change it.
SELECT set_config('statement_timeout', '0', true);

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

-- name: ListenForEndedJobs :exec
-- ListenForEndedJobs makes this session LISTEN on the channel that
-- FinishAndClaimJobs and CancelQueuedJob notify when jobs of the current
-- schema end (JobsEnded), then hold, until it ends, the 16 shared advisory
-- locks whose presence tells FinishAndClaimJobs to notify. LISTEN takes no
-- parameters, so the name is quoted here; a missing schema has no md5,
-- which format refuses.
DO $$
BEGIN
    EXECUTE format('LISTEN %I', 'jobtable-ended:' || md5(current_schema()));
    PERFORM pg_advisory_lock_shared(hashtext('jobtable-ended:' || current_schema()), bucket)
    FROM generate_series(0, 15) AS bucket;
END
$$;

-- name: DisableSynchronousCommit :exec
-- DisableSynchronousCommit makes this session's commits return before they
-- reach the disk: a crash may lose the last moments' writes, never corrupt.
SELECT set_config('synchronous_commit', 'off', false);

-- name: ConfigureSession :exec
-- ConfigureSession sets the encoding this session's text travels in, and
-- bounds, to idle_ms milliseconds, how long one of its transactions may wait
-- on a client that stopped (a frozen process) before the server ends the
-- session and frees the transaction's locks: the wait for the client's next
-- statement (idle_in_transaction_session_timeout), and the wait for it to
-- read a reply too large for the connection's buffers (tcp_user_timeout,
-- which a Unix-domain socket ignores).
SELECT set_config('client_encoding', @encoding::text, false),
    set_config('idle_in_transaction_session_timeout', (@idle_ms::integer)::text, false),
    set_config('tcp_user_timeout', (@idle_ms::integer)::text, false);

-- name: KeepIdleSession :exec
-- KeepIdleSession exempts this session from idle_session_timeout, which a
-- role or the server may set: the engine's sessions wait idle by design (a
-- listener for its notifications, a pooled connection for its next write,
-- closed by the pool itself after a while). A server without the setting
-- (before PostgreSQL 14) has no such setting, and nothing is set.
SELECT set_config('idle_session_timeout', '0', false)
WHERE current_setting('idle_session_timeout', true) IS NOT NULL;

-- name: CreateSearchPathSchema :exec
-- CreateSearchPathSchema creates the first schema of the search_path when it
-- does not exist (current_schema() is then null), so that a URL naming a
-- schema of its own needs no CREATE SCHEMA beforehand. "$user" stands for the
-- session's user; parse_ident unquotes a quoted name and folds an unquoted one.
DO $$
DECLARE
    first text := trim(split_part(current_setting('search_path'), ',', 1));
BEGIN
    IF current_schema() IS NULL AND first <> '' THEN
        IF first IN ('$user', '"$user"') THEN
            first := current_user;
        ELSE
            first := (parse_ident(first))[1];
        END IF;
        EXECUTE 'CREATE SCHEMA IF NOT EXISTS ' || quote_ident(first);
    END IF;
END
$$;

-- name: DescribeTable :many
-- DescribeTable lists a table of the current schema: its columns (with
-- their type and whether they are NOT NULL) and the names of its indexes, in
-- one read. A table that does not exist has no rows. Differs from SQLite,
-- which describes a table through its pragma functions.
SELECT 'column'::text AS what, a.attname::text AS name,
    format_type(a.atttypid, a.atttypmod)::text AS type, a.attnotnull AS not_null
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = to_regclass(quote_ident(current_schema()) || '.' || quote_ident(@table_name::text))
    AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'index', c.relname::text, '', false
FROM pg_catalog.pg_index x JOIN pg_catalog.pg_class c ON c.oid = x.indexrelid
WHERE x.indrelid = to_regclass(quote_ident(current_schema()) || '.' || quote_ident(@table_name::text));

-- name: UseTemporarySchema :exec
-- UseTemporarySchema makes the session's temporary schema the only one of
-- the search_path until the transaction ends, so that tables created in it
-- (the reference the schema check compares with) vanish with it.
SELECT set_config('search_path', 'pg_temp', true);

-- name: SearchPathSchemaDenied :one
-- SearchPathSchemaDenied tells whether the first schema of the search_path
-- exists but the session's role may not use it (no USAGE right), which
-- current_schema() then skips as if it did not exist: the role needs the
-- owner's grant, not a new schema. "$user" and quoting are read as in
-- CreateSearchPathSchema.
SELECT EXISTS (
    SELECT 1
    FROM (SELECT trim(split_part(current_setting('search_path'), ',', 1)) AS first) AS f
    JOIN pg_catalog.pg_namespace AS n ON n.nspname = CASE
        WHEN f.first = '' THEN NULL
        WHEN f.first IN ('$user', '"$user"') THEN current_user::text
        ELSE (parse_ident(f.first))[1]
    END
    WHERE NOT has_schema_privilege(n.oid, 'USAGE')
) AS denied;
