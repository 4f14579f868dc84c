-- The PostgreSQL schema of jobtable. PostgresEngine.open applies it, under an
-- advisory lock, to a schema (the first of the connection's search_path) that
-- has no jobtable_schema table, and records SCHEMA_VERSION (in
-- src/jobtable/_engines/postgres/schema.py) in that table; bump that version
-- with every change here. The tables, columns, checks and partial indexes match the SQLite
-- schema (../schema.sql) with PostgreSQL types.

-- jobs holds one row per job: the table itself is the queue.
CREATE TABLE jobs (
    -- seq is the enqueue order; among ready jobs of one priority, claims take
    -- the lowest first, so they run in enqueue order even within one tick.
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- id is 128 random bits as URL-safe text: it appears in URLs and must not
    -- be guessable.
    id text NOT NULL UNIQUE,
    kind text NOT NULL,
    -- queue names the queue the job waits in; a runner consumes named queues.
    queue text NOT NULL DEFAULT 'default',
    -- priority orders the ready jobs of a queue: lower first, then by seq.
    priority integer NOT NULL DEFAULT 0,
    -- A job moves queued -> running -> succeeded, failed or cancelled; a
    -- failed attempt with attempts left moves it back to queued. A job of a
    -- workflow with dependencies starts pending, and moves to queued when the
    -- last of them finishes (schema version 8).
    status text NOT NULL DEFAULT 'queued'
        CONSTRAINT jobs_status_check
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'pending')),
    -- payload and result are JSON text written by the runner from typed data.
    -- text, not jsonb: the runner writes and reads JSON text, so text costs no
    -- parse on enqueue and no re-serialization on claim, round-trips exactly,
    -- and accepts every payload SQLite accepts (jsonb refuses the escape
    -- \u0000). A later feature that queries payloads can cast to jsonb.
    payload text NOT NULL,
    result text,
    -- error is a Failure message or one the runner writes itself, never a
    -- handler's exception text; it is set exactly when the job failed (a
    -- cancelled job has none: its status says what happened).
    error text CHECK ((error IS NOT NULL) = (status = 'failed')),
    -- errors is the history of failed attempts, a JSON array of
    -- {"attempt", "error", "at"} objects holding the same stored messages.
    errors text NOT NULL DEFAULT '[]',
    -- runner names the runner that claimed the job; attempt counts claims and
    -- fences every write a worker makes, so a worker that lost its claim can
    -- never change the job afterwards.
    runner text,
    attempt integer NOT NULL DEFAULT 0,
    -- max_attempts is how many claims the job may have; attempt never exceeds it.
    max_attempts integer NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    -- timeout is the seconds one attempt may take; NULL has no limit.
    timeout double precision CHECK (timeout IS NULL OR timeout > 0),
    -- cancel_requested is set by a cancel of the running job: the runner that
    -- holds it cancels its handler.
    cancel_requested boolean NOT NULL DEFAULT false,
    -- run_at is the earliest time the job may be claimed. scheduled is set
    -- while a queued job's run_at was later than the time it was queued: the
    -- claim reads only unscheduled rows, and a runner stages a scheduled job
    -- (clears scheduled) once its run_at has come, so scheduled jobs cost the
    -- claim nothing however many wait.
    scheduled boolean NOT NULL DEFAULT false,
    run_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    -- started_at is the last claim's time; finished_at is set when the job
    -- succeeded, failed or was cancelled.
    started_at timestamptz,
    finished_at timestamptz,
    updated_at timestamptz NOT NULL,
    -- unique_key makes the job unique among the jobs of its kind while its
    -- status is one of unique_statuses, a bitmask (queued 1, running 2,
    -- succeeded 4, failed 8, cancelled 16) that always holds queued and
    -- running: a job moves between those two (claim, retry) without leaving
    -- its key, so neither move can collide. Both are null for a job that is
    -- not unique. jobs_unique enforces it.
    unique_key text,
    unique_statuses integer CHECK (
        (unique_statuses IS NULL) = (unique_key IS NULL)
        AND (unique_statuses IS NULL OR ((unique_statuses & 3) = 3 AND unique_statuses < 32))
    ),
    -- traceparent is the W3C trace context current at enqueue, if any.
    traceparent text,
    -- partition_key is the job's key among its queue's partitions: a queue
    -- with a partition limit runs at most that many jobs of one key at once
    -- (the jobs without a key count as one key). sequence_key puts the job in
    -- a sequence: the jobs of one key run one at a time in seq order, a job
    -- waiting while an earlier one of its key is queued or running, or, when
    -- that one has sequence_blocks set, failed or cancelled. All three are
    -- null or false for a job that uses neither (schema version 4).
    partition_key text,
    sequence_key text,
    sequence_blocks boolean NOT NULL DEFAULT false,
    -- tags are the job's labels, a JSON array of distinct short strings set
    -- at enqueue and never changed after; job_tags indexes them. meta is a
    -- small JSON object set at enqueue, or null: context for the handler and
    -- the hooks, never a secret. Both text, as payload is (schema version 6).
    tags text NOT NULL DEFAULT '[]',
    meta text,
    -- workflow_id names the job's workflow (see workflows), or is null.
    -- pending_deps counts the job's dependencies (job_deps) not yet done:
    -- the job leaves pending for queued when it reaches 0. blocked_by is the
    -- dependency whose failure or cancel cancelled the job, which a retry of
    -- that dependency puts back to pending (schema version 8).
    workflow_id text,
    pending_deps integer NOT NULL DEFAULT 0,
    blocked_by text,
    -- run_trace is the W3C trace context of the run span of the attempt that
    -- ended the job, stored with its outcome by an instrumented store (null
    -- otherwise): its dependents' run spans link to it (schema version 9).
    run_trace text
)
-- Every job's life leaves dead row versions behind (a claim and a finish each
-- write a new version, pruning deletes it), and none of those updates is HOT:
-- status and updated_at are in the indexes' columns or conditions. So
-- autovacuum visits jobs once 1% of it is dead, not the default 20%, which
-- on a table kept for days would let millions of dead versions pile up in
-- the claim's index between visits; and it vacuums jobs at full speed, as a
-- queue's churn needs (schema version 11).
WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0.02
);

-- A claim reads only the ready rows of its queue, in priority and enqueue
-- order, so it costs the same with a million finished or scheduled rows as
-- with none.
CREATE INDEX jobs_queued ON jobs (queue, priority, seq)
    WHERE status = 'queued' AND scheduled = false;
-- Staging reads only scheduled rows, earliest first.
CREATE INDEX jobs_scheduled ON jobs (queue, run_at)
    WHERE status = 'queued' AND scheduled = true;
-- Crash recovery and cancel requests read only running rows.
CREATE INDEX jobs_running ON jobs (runner) WHERE status = 'running';
-- Pruning reads only finished rows, oldest first.
CREATE INDEX jobs_finished ON jobs (updated_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
-- At most one job of a kind holds a unique key in a status its
-- unique_statuses covers: an enqueue that collides inserts nothing
-- (CreateUniqueJob) and reads the holder (GetUniqueHolder). A job that leaves
-- its covered statuses leaves the index, which frees the key.
CREATE UNIQUE INDEX jobs_unique ON jobs (kind, unique_key)
    WHERE unique_key IS NOT NULL AND (unique_statuses & CASE status
        WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
        WHEN 'failed' THEN 8 ELSE 16 END) <> 0;
-- The listing's pages (the ListJobs* queries), each read in seq order so
-- that a keyset page reads about one page of entries. A change of status is
-- never a HOT update here (status is in the claim's indexes' conditions), so
-- every index whose condition a job's new row meets gets an entry at each
-- claim and finish: leaving running rows out, jobs_by_status_kind and
-- jobs_by_status_queue get one at the finish and none at the claim, and they
-- are the fewest that list a kind's or a queue's jobs of any status (and of
-- no status: ListJobsByKind reads each status's page) without reading other
-- kinds' or queues' rows; the running jobs, no more than the runners'
-- workers, are listed from jobs_running and sorted, the queued ones from
-- jobs_queued and jobs_scheduled. A page of succeeded jobs alone reads the
-- primary key and skips other statuses' jobs; a page of a status a job
-- seldom reaches (failed, cancelled, pending) alone reads
-- jobs_by_rare_status, which a claim and a finish never write. Schema
-- versions 3 to 9 had jobs_by_status (status, seq) instead, one more entry a
-- finish: the upgrade to version 10 drops it.
CREATE INDEX jobs_by_status_kind ON jobs (status, kind, seq) WHERE status <> 'running';
CREATE INDEX jobs_by_status_queue ON jobs (status, queue, seq) WHERE status <> 'running';
CREATE INDEX jobs_by_rare_status ON jobs (status, seq)
    WHERE status IN ('failed', 'cancelled', 'pending');
-- How often each status, kind and queue go together, for the planner: told
-- only each column's own frequencies, it takes a page of one status, kind
-- and queue for common whenever each is, and reads the primary key backwards
-- past every newer job instead of the status's index (schema version 10).
CREATE STATISTICS jobs_listing (mcv) ON status, kind, queue FROM jobs;

-- A partitioned claim finds the keys that have ready jobs, and each key's
-- oldest, through this index; jobs without a key are not in it, so it costs
-- nothing to a queue that does not partition (schema version 4).
CREATE INDEX jobs_partition ON jobs (queue, partition_key, priority, seq)
    WHERE status = 'queued' AND scheduled = false AND partition_key IS NOT NULL;
-- A claim looks for an earlier job of a job's sequence that still holds the
-- sequence back; succeeded jobs never do, so they leave the index (schema
-- version 4).
CREATE INDEX jobs_sequence ON jobs (sequence_key, seq)
    WHERE sequence_key IS NOT NULL AND status <> 'succeeded';

-- A workflow's jobs, in enqueue order; jobs of no workflow are not in it,
-- and its key never changes after the insert (schema version 8).
CREATE INDEX jobs_workflow ON jobs (workflow_id, seq) WHERE workflow_id IS NOT NULL;

-- workflows names each workflow; its jobs hold its id (schema version 8).
CREATE TABLE workflows (
    id text PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL,
    -- deadline_at is when the runners' maintenance cancels the workflow's
    -- unfinished jobs, or null; deadline_done is set once it did (or found
    -- nothing left), so it does so once (schema version 16).
    deadline_at timestamptz,
    deadline_done boolean NOT NULL DEFAULT false
);
-- The list of workflows reads a page newest first as one range of this
-- index: workflows are never updated, so each costs its insert one entry and
-- nothing after (schema version 10).
CREATE INDEX workflows_by_time ON workflows (created_at, id);
-- The maintenance finds the workflows whose deadline passed in this small
-- index: only those with a deadline not yet passed are in it (version 16).
CREATE INDEX workflows_deadlines ON workflows (deadline_at)
WHERE deadline_at IS NOT NULL AND NOT deadline_done;

-- job_deps holds one row per dependency: job runs only after dep finished
-- (succeeded, or ended in any way when run_on_failure is set). feeds marks
-- the dependency whose result becomes job's payload. done is set when dep
-- finished in a way that counts, in the transaction that records it, and
-- never cleared, so no finish is counted twice (schema version 8). Rows are
-- written only for jobs of workflows: other jobs cost nothing.
CREATE TABLE job_deps (
    dep text NOT NULL,
    job text NOT NULL,
    run_on_failure boolean NOT NULL DEFAULT false,
    feeds boolean NOT NULL DEFAULT false,
    done boolean NOT NULL DEFAULT false,
    PRIMARY KEY (dep, job)
);
-- A job's dependencies are found by job.
CREATE INDEX job_deps_job ON job_deps (job);

-- job_tags lists each tagged job under each of its tags, so that a listing
-- by tag reads one index range in seq order (ListJobsByTag) at any table
-- size. A side table, not a text[] column with a GIN index: a claim or a
-- finish changes status, which the listing's indexes hold, so its update of
-- the jobs row is never HOT and would add an entry to every index of the
-- table, a GIN index included. job_tags is written only by the jobs table's
-- insert and delete triggers, so claims, retries and finishes write no tag
-- entry, and untagged jobs cost nothing but the trigger (schema version 6).
CREATE TABLE job_tags (
    tag text NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (tag, seq)
);
-- A deleted job's tags are found by its seq.
CREATE INDEX job_tags_seq ON job_tags (seq);

-- job_steps records the completed steps of a job's handler (ctx.step): each
-- step's output, JSON text written from typed data like a result, with the
-- attempt that recorded it and when. A later attempt of the job reads a
-- step's output instead of running the step again. A step is recorded only
-- while the claim of its attempt holds (RecordJobStep), and the jobs
-- table's delete trigger deletes a job's steps with it (schema version 7).
CREATE TABLE job_steps (
    job_id text NOT NULL,
    name text NOT NULL,
    output text NOT NULL,
    recorded_at timestamptz NOT NULL,
    attempt integer NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- queues holds the flow control of the queues that have any: whether the
-- queue is paused, and its limits. A queue without a row, or whose row has
-- no limit and is not paused, is claimed as it always was. The limit columns
-- are the ones claims obey; the declared_ ones are what the code of the
-- latest runner that started declared, and they are copied over the limits
-- unless an operator set limits (overridden), which are kept until cleared.
-- A limited claim locks the queue's row (LockQueueFlow), which serializes
-- the limited claims of one queue (schema version 4).
CREATE TABLE queues (
    name text PRIMARY KEY,
    paused boolean NOT NULL DEFAULT false,
    -- concurrency is the most jobs of the queue running at once, across
    -- every runner; partition_limit the most of one partition key.
    concurrency integer CHECK (concurrency IS NULL OR concurrency >= 1),
    partition_limit integer CHECK (partition_limit IS NULL OR partition_limit >= 1),
    -- rate_limit jobs at most start in any rate_period seconds; per key when
    -- rate_per_key is set.
    rate_limit integer CHECK (rate_limit IS NULL OR rate_limit >= 1),
    rate_period double precision CHECK (rate_period IS NULL OR rate_period > 0),
    rate_per_key boolean NOT NULL DEFAULT false,
    declared_concurrency integer,
    declared_partition_limit integer,
    declared_rate_limit integer,
    declared_rate_period double precision,
    declared_rate_per_key boolean NOT NULL DEFAULT false,
    overridden boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL,
    CHECK ((rate_limit IS NULL) = (rate_period IS NULL))
);

-- queue_starts records when each job of a rate-limited queue started, one
-- row per attempt whatever its outcome, on the server's clock, so that
-- runners on machines with skewed clocks count one window; a claim deletes
-- the rows older than its period.
CREATE TABLE queue_starts (
    queue text NOT NULL,
    partition_key text,
    started_at timestamptz NOT NULL
);
CREATE INDEX queue_starts_by_time ON queue_starts (queue, started_at);

-- runners holds one row per live runner, kept fresh by its heartbeat. A
-- runner whose heartbeat is older than the lease is dead, and its running
-- jobs are failed as interrupted. host names the machine the runner runs on
-- (its kernel's boot and the process's pid namespace) and process the
-- process (its pid and start time), both opaque text the library compares
-- and never parses in SQL, null where the machine cannot tell: a runner of
-- the same host whose process is gone is dead at once, whatever its lease
-- (src/jobtable/_runner/process.py). Version 4 added them. missing_keys is
-- the JSON array of the secret key ids the runner lacked for a job it
-- claimed, sorted, written by its heartbeat when it changes; null while it
-- lacked none. Version 12 added it.
CREATE TABLE runners (
    name text PRIMARY KEY,
    started_at timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    host text,
    process text,
    missing_keys text
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

-- jobtable_index_tags and jobtable_unindex_tags keep job_tags in step with
-- the jobs inserted and deleted, once per statement over its transition
-- table, so a batch of jobs costs one statement, not one per row.
CREATE FUNCTION jobtable_index_tags() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO job_tags (tag, seq)
    SELECT DISTINCT tag.value, inserted.seq
    FROM inserted, jsonb_array_elements_text(inserted.tags::jsonb) AS tag(value)
    WHERE inserted.tags <> '[]';
    RETURN NULL;
END
$$;

CREATE FUNCTION jobtable_unindex_tags() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_tags USING deleted
    WHERE job_tags.seq = deleted.seq AND deleted.tags <> '[]';
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_index_tags AFTER INSERT ON jobs
REFERENCING NEW TABLE AS inserted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_index_tags();

CREATE TRIGGER jobs_unindex_tags AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_unindex_tags();

-- jobtable_delete_steps deletes the steps of the jobs deleted, once per
-- statement over its transition table, so pruning a batch of jobs costs one
-- statement (schema version 7).
CREATE FUNCTION jobtable_delete_steps() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_steps USING deleted WHERE job_steps.job_id = deleted.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_delete_steps AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_delete_steps();

-- jobtable_delete_deps deletes the edges (job_deps) of the deleted jobs of
-- workflows, both ways, once per statement over its transition table
-- (schema version 8).
CREATE FUNCTION jobtable_delete_deps() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_deps USING deleted
    WHERE deleted.workflow_id IS NOT NULL AND job_deps.job = deleted.id;
    DELETE FROM job_deps USING deleted
    WHERE deleted.workflow_id IS NOT NULL AND job_deps.dep = deleted.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_delete_deps AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_delete_deps();

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
