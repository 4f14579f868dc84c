-- The PostgreSQL schema of jobtable. PostgresEngine.open applies it, under an
-- advisory lock, to a schema (the first of the connection's search_path) that
-- has no jobtable_schema table, and records SCHEMA_VERSION (in _postgres.py) in
-- that table; bump that version with every change here. The tables, columns,
-- checks and partial indexes match the SQLite schema (../schema.sql) with
-- PostgreSQL types.

-- jobs holds one row per job: the table itself is the queue.
CREATE TABLE jobs (
    -- seq is the enqueue order; claims take the lowest first, so jobs run in
    -- the order they were enqueued, even within one clock tick.
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- id is 128 random bits as URL-safe text: it appears in URLs and must not
    -- be guessable.
    id text NOT NULL UNIQUE,
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    -- payload and result are JSON text written by the runner from typed data.
    -- text, not jsonb: the runner writes and reads JSON text, so text costs no
    -- parse on enqueue and no re-serialization on claim, round-trips exactly,
    -- and accepts every payload SQLite accepts (jsonb refuses the escape
    -- \u0000). A later feature that queries payloads can cast to jsonb.
    payload text NOT NULL,
    result text,
    -- error is a Failure message or one the runner writes itself, never a
    -- handler's exception text; it is set exactly when the job failed.
    error text CHECK ((error IS NOT NULL) = (status = 'failed')),
    -- runner names the runner that claimed the job; attempt counts claims and
    -- fences every write a worker makes, so a worker that lost its claim can
    -- never change the job afterwards.
    runner text,
    attempt integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- A claim reads only queued rows, so it costs the same with a million
-- finished rows as with none.
CREATE INDEX jobs_queued ON jobs (seq) WHERE status = 'queued';
-- Crash recovery reads only running rows.
CREATE INDEX jobs_running ON jobs (runner) WHERE status = 'running';
-- Pruning reads only finished rows, oldest first.
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE status IN ('succeeded', 'failed');

-- runners holds one row per live runner, kept fresh by its heartbeat. A
-- runner whose heartbeat is older than the lease is dead, and its running
-- jobs are failed as interrupted.
CREATE TABLE runners (
    name text PRIMARY KEY,
    started_at timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);

-- jobtable_schema holds the one row that records which version of this file
-- the schema is at. Differs by necessity from SQLite, which keeps the version
-- in PRAGMA user_version: PostgreSQL has no such slot per schema.
CREATE TABLE jobtable_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL
);

-- jobtable_channel names the NOTIFY channel of the jobtable tables in
-- schema_name, so runners sharing a server wake only for their own schema.
-- A channel name has at most 63 bytes: a longer schema name is hashed.
CREATE FUNCTION jobtable_channel(schema_name text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT 'jobtable:' || CASE
        WHEN octet_length(schema_name) <= 54 THEN schema_name
        ELSE md5(schema_name)
    END
$$;

-- jobtable_notify_enqueue tells idle runners in every process that jobs were
-- enqueued. PostgreSQL delivers the notification when the inserting
-- transaction commits, and folds identical ones of a transaction into one.
-- search_path is fixed at creation so the inserter's own path cannot change
-- which jobtable_channel runs.
CREATE FUNCTION jobtable_notify_enqueue() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM pg_notify(jobtable_channel(TG_TABLE_SCHEMA), '');
    RETURN NULL;
END
$$;

-- Once per INSERT statement, not per row: one wake-up is enough for a batch.
CREATE TRIGGER jobs_notify_enqueue AFTER INSERT ON jobs
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_notify_enqueue();

-- jobtable_listen makes the calling session LISTEN on the channel of the
-- jobtable tables in its current schema, and returns the channel's name.
-- LISTEN takes no parameters, so the name is quoted here, keeping SQL out of
-- the Python code.
CREATE FUNCTION jobtable_listen() RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    channel text := jobtable_channel(current_schema());
BEGIN
    IF channel IS NULL THEN
        RAISE EXCEPTION 'jobtable: no schema of the search_path exists';
    END IF;
    EXECUTE format('LISTEN %I', channel);
    RETURN channel;
END
$$;
