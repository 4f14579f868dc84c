-- The SQLite schema of jobtable. Store.open applies it to a new database and
-- records its version in PRAGMA user_version; bump SCHEMA_VERSION (in
-- src/jobtable/_engines/sqlite/file.py) with every change here.

-- jobs holds one row per job: the table itself is the queue.
CREATE TABLE jobs (
    -- seq is the enqueue order; among ready jobs of one priority, claims take
    -- the lowest first, so they run in enqueue order even within one tick.
    seq INTEGER PRIMARY KEY,
    -- id is 128 random bits as URL-safe text: it appears in URLs and must not
    -- be guessable.
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    -- queue names the queue the job waits in; a runner consumes named queues.
    queue TEXT NOT NULL DEFAULT 'default',
    -- priority orders the ready jobs of a queue: lower first, then by seq.
    priority INTEGER NOT NULL DEFAULT 0,
    -- A job moves queued -> running -> succeeded, failed or cancelled; a
    -- failed attempt with attempts left moves it back to queued. A job of a
    -- workflow with dependencies starts pending, and moves to queued when the
    -- last of them finishes (schema version 8).
    status TEXT NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'pending')),
    -- payload and result are JSON text written by the runner from typed data.
    payload TEXT NOT NULL,
    result TEXT,
    -- error is a Failure message or one the runner writes itself, never a
    -- handler's exception text; it is set exactly when the job failed (a
    -- cancelled job has none: its status says what happened).
    error TEXT CHECK ((error IS NOT NULL) = (status = 'failed')),
    -- errors is the history of failed attempts, a JSON array of
    -- {"attempt", "error", "at"} objects holding the same stored messages.
    errors TEXT NOT NULL DEFAULT '[]',
    -- runner names the runner that claimed the job; attempt counts claims and
    -- fences every write a worker makes, so a worker that lost its claim can
    -- never change the job afterwards.
    runner TEXT,
    attempt INTEGER NOT NULL DEFAULT 0,
    -- max_attempts is how many claims the job may have; attempt never exceeds it.
    max_attempts INTEGER NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    -- timeout is the seconds one attempt may take; NULL has no limit.
    timeout REAL CHECK (timeout IS NULL OR timeout > 0),
    -- cancel_requested is set by a cancel of the running job: the runner that
    -- holds it cancels its handler.
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    -- run_at is the earliest time the job may be claimed. scheduled is set
    -- while a queued job's run_at was later than the time it was queued: the
    -- claim reads only unscheduled rows, and a runner stages a scheduled job
    -- (clears scheduled) once its run_at has come, so scheduled jobs cost the
    -- claim nothing however many wait.
    scheduled INTEGER NOT NULL DEFAULT 0,
    run_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    -- started_at is the last claim's time; finished_at is set when the job
    -- succeeded, failed or was cancelled.
    started_at TEXT,
    finished_at TEXT,
    updated_at TEXT NOT NULL,
    -- unique_key makes the job unique among the jobs of its kind while its
    -- status is one of unique_statuses, a bitmask (queued 1, running 2,
    -- succeeded 4, failed 8, cancelled 16) that always holds queued and
    -- running: a job moves between those two (claim, retry) without leaving
    -- its key, so neither move can collide. Both are null for a job that is
    -- not unique. jobs_unique enforces it.
    unique_key TEXT,
    unique_statuses INTEGER CHECK (
        (unique_statuses IS NULL) = (unique_key IS NULL)
        AND (unique_statuses IS NULL OR ((unique_statuses & 3) = 3 AND unique_statuses < 32))
    ),
    -- traceparent is the W3C trace context current at enqueue, if any.
    traceparent TEXT,
    -- partition_key is the job's key among its queue's partitions: a queue
    -- with a partition limit runs at most that many jobs of one key at once
    -- (the jobs without a key count as one key). sequence_key puts the job in
    -- a sequence: the jobs of one key run one at a time in seq order, a job
    -- waiting while an earlier one of its key is queued or running, or, when
    -- that one has sequence_blocks set, failed or cancelled. All three are
    -- null or 0 for a job that uses neither (schema version 4).
    partition_key TEXT,
    sequence_key TEXT,
    sequence_blocks INTEGER NOT NULL DEFAULT 0,
    -- tags are the job's labels, a JSON array of distinct short strings set
    -- at enqueue and never changed after; job_tags indexes them. meta is a
    -- small JSON object set at enqueue, or null: context for the handler and
    -- the hooks, never a secret (schema version 6).
    tags TEXT NOT NULL DEFAULT '[]',
    meta TEXT,
    -- workflow_id names the job's workflow (see workflows), or is null.
    -- pending_deps counts the job's dependencies (job_deps) not yet done:
    -- the job leaves pending for queued when it reaches 0. blocked_by is the
    -- dependency whose failure or cancel cancelled the job, which a retry of
    -- that dependency puts back to pending (schema version 8).
    workflow_id TEXT,
    pending_deps INTEGER NOT NULL DEFAULT 0,
    blocked_by TEXT,
    -- run_trace is the W3C trace context of the run span of the attempt that
    -- ended the job, stored with its outcome by an instrumented store (null
    -- otherwise): its dependents' run spans link to it (schema version 9).
    run_trace TEXT,
    -- partition_by and sequence_by name the payload field that a pending job
    -- fed by its dependency's result (job_deps.feeds) takes its partition and
    -- sequence keys from, since its payload is unknown until that result
    -- feeds it; null for every other job. The statement that feeds the job
    -- computes them (FeedDependents), and a job it gives a sequence_by
    -- takes a new seq, the last of the enqueue order: a fed job joins its
    -- sequence when its payload is known (schema version 13).
    partition_by TEXT,
    sequence_by TEXT,
    -- published counts the partial results the job has published, so that a
    -- stream of its progress never yields one twice. debounce_key makes the
    -- job the one pending job of its key among its kind's debounced jobs
    -- until it is first claimed: a debounced enqueue of the key updates it
    -- instead of storing another (jobs_debounce). Null for a job enqueued
    -- without debounce (schema version 15).
    published INTEGER NOT NULL DEFAULT 0,
    debounce_key TEXT
);

-- A claim reads only the ready rows of its queue, in priority and enqueue
-- order, so it costs the same with a million finished or scheduled rows as
-- with none.
CREATE INDEX jobs_queued ON jobs (queue, priority, seq)
    WHERE status = 'queued' AND scheduled = 0;
-- Staging reads only scheduled rows, earliest first.
CREATE INDEX jobs_scheduled ON jobs (queue, run_at)
    WHERE status = 'queued' AND scheduled = 1;
-- Crash recovery and cancel requests read only running rows.
CREATE INDEX jobs_running ON jobs (runner) WHERE status = 'running';
-- Pruning reads only finished rows, oldest first. Its condition is ORs, not
-- IN: SQLite evaluates an IN list of three values or more through a temporary
-- table it builds at each statement that writes a row, which cost every
-- insert and change of status (BENCHMARKS.md). Version 2 had the IN: the
-- upgrade to version 3 runs this DROP before the CREATE; a new file has no
-- such index, so the DROP does nothing there.
DROP INDEX IF EXISTS jobs_finished;
CREATE INDEX jobs_finished ON jobs (updated_at)
    WHERE status = 'succeeded' OR status = 'failed' OR status = 'cancelled';
-- At most one job of a kind holds a unique key in a status its
-- unique_statuses covers: an enqueue that collides inserts nothing
-- (CreateUniqueJob) and reads the holder (GetUniqueHolder). A job that leaves
-- its covered statuses leaves the index, which frees the key.
CREATE UNIQUE INDEX jobs_unique ON jobs (kind, unique_key)
    WHERE unique_key IS NOT NULL AND (unique_statuses & CASE status
        WHEN 'queued' THEN 1 WHEN 'running' THEN 2 WHEN 'succeeded' THEN 4
        WHEN 'failed' THEN 8 ELSE 16 END) <> 0;
-- The listing's pages (the ListJobs* queries), each read in seq order so
-- that a keyset page reads about one page of entries. A claim and a finish
-- write none of them (schema version 10): kind and queue never change after
-- the insert, so jobs_by_kind and jobs_by_queue, which hold no status, are
-- written once, at the insert; and the statuses a job seldom reaches
-- (failed, cancelled, pending) have indexes of their own that a job enters
-- only when it reaches one. A page of succeeded jobs reads jobs_by_kind,
-- jobs_by_queue or the primary key and skips the jobs of other statuses;
-- queued jobs are listed from jobs_queued and jobs_scheduled, running jobs
-- from jobs_running, and sorted.
-- Schema versions 3 to 9 had indexes keyed by status instead, which a
-- claim and a finish each moved: the upgrade to version 10 drops them.
DROP INDEX IF EXISTS jobs_by_status;
DROP INDEX IF EXISTS jobs_by_status_kind;
DROP INDEX IF EXISTS jobs_by_status_queue;
CREATE INDEX jobs_by_kind ON jobs (kind, seq);
CREATE INDEX jobs_by_queue ON jobs (queue, seq);
-- Their condition is ORs, not IN, as jobs_finished's is.
CREATE INDEX jobs_by_rare_status ON jobs (status, seq)
    WHERE status = 'failed' OR status = 'cancelled' OR status = 'pending';
CREATE INDEX jobs_by_rare_status_kind ON jobs (status, kind, seq)
    WHERE status = 'failed' OR status = 'cancelled' OR status = 'pending';
CREATE INDEX jobs_by_rare_status_queue ON jobs (status, queue, seq)
    WHERE status = 'failed' OR status = 'cancelled' OR status = 'pending';

-- A partitioned claim finds the keys that have ready jobs, and each key's
-- oldest, through this index; jobs without a key are not in it, so it costs
-- nothing to a queue that does not partition (schema version 4).
CREATE INDEX jobs_partition ON jobs (queue, partition_key, priority, seq)
    WHERE status = 'queued' AND scheduled = 0 AND partition_key IS NOT NULL;
-- A claim looks for an earlier job of a job's sequence that still holds the
-- sequence back; succeeded jobs never do, so they leave the index (schema
-- version 4).
CREATE INDEX jobs_sequence ON jobs (sequence_key, seq)
    WHERE sequence_key IS NOT NULL AND status <> 'succeeded';

-- At most one job of a kind holds a debounce key while it waits for its
-- first claim (queued, attempt 0): a debounced enqueue updates that job
-- (DebounceJob) or inserts one (CreateDebouncedJob). A claim takes the job
-- out of the index (attempt becomes 1), so a retry never collides and the
-- next enqueue of the key stores a new job (schema version 15).
CREATE UNIQUE INDEX jobs_debounce ON jobs (kind, debounce_key)
    WHERE debounce_key IS NOT NULL AND status = 'queued' AND attempt = 0;

-- A workflow's jobs, in enqueue order; jobs of no workflow are not in it,
-- and its key never changes after the insert (schema version 8).
CREATE INDEX jobs_workflow ON jobs (workflow_id, seq) WHERE workflow_id IS NOT NULL;

-- workflows names each workflow; its jobs hold its id (schema version 8).
CREATE TABLE workflows (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    -- deadline_at is when the runners' maintenance cancels the workflow's
    -- unfinished jobs, or null; deadline_done is set once it did (or found
    -- nothing left), so it does so once (schema version 16).
    deadline_at TEXT,
    deadline_done INTEGER NOT NULL DEFAULT 0,
    -- concurrency is the most workflows of its name unfinished at once, or
    -- null: no limit. slot is null without one, else 'waiting' (its jobs
    -- wait, pending, each counting the slot as one more dependency),
    -- 'held' (admitted, running), or 'freed' (its jobs all ended or were
    -- deleted); 'admitting' only inside the trigger that admits it. The
    -- triggers below admit the oldest waiting workflow of a name when one
    -- ends (schema version 17).
    concurrency INTEGER CHECK (concurrency IS NULL OR concurrency >= 1),
    slot TEXT
) WITHOUT ROWID;
-- The list of workflows reads a page newest first as one range of this
-- index: workflows are never updated, so each costs its insert one entry and
-- nothing after (schema version 10).
CREATE INDEX workflows_by_time ON workflows (created_at, id);
-- The maintenance finds the workflows whose deadline passed in this small
-- index: only those with a deadline not yet passed are in it (version 16).
CREATE INDEX workflows_deadlines ON workflows (deadline_at)
WHERE deadline_at IS NOT NULL AND deadline_done = 0;
-- The workflows of a name holding or waiting for a slot, oldest first: an
-- enqueue counts the held ones and an end admits the oldest waiting one.
-- Workflows without a limit are not in it (schema version 17).
CREATE INDEX workflows_slots ON workflows (name, slot, created_at, id)
WHERE slot IS NOT NULL;

-- job_deps holds one row per dependency: job runs only after dep finished
-- (succeeded, or ended in any way when run_on_failure is set). feeds marks
-- the dependency whose result becomes job's payload. done is set when dep
-- finished in a way that counts, in the transaction that records it, and
-- never cleared, so no finish is counted twice (schema version 8). Rows are
-- written only for jobs of workflows: other jobs cost nothing.
CREATE TABLE job_deps (
    dep TEXT NOT NULL,
    job TEXT NOT NULL,
    run_on_failure INTEGER NOT NULL DEFAULT 0,
    feeds INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (dep, job)
) WITHOUT ROWID;
-- A job's dependencies are found by job.
CREATE INDEX job_deps_job ON job_deps (job);
-- A deleted job of a workflow takes its edges with it, both ways: pruning
-- and delete need no change, and jobs of no workflow pay only the trigger's
-- condition.
CREATE TRIGGER jobs_deps_delete AFTER DELETE ON jobs WHEN old.workflow_id IS NOT NULL
BEGIN
    DELETE FROM job_deps WHERE job = old.id;
    DELETE FROM job_deps WHERE dep = old.id;
END;

-- A workflow with a concurrency limit frees its slot when its last
-- unfinished job ends or is deleted, in the statement that does so: the
-- oldest waiting workflow of its name is then admitted if the held ones
-- leave room for it, and its jobs stop counting the slot (a job left with
-- no dependency is queued, ready at once or at its run_at). A waiting
-- workflow that ends before its turn gives up its place, its jobs counting
-- the slot no more. Jobs of no limited workflow pay only the condition
-- (schema version 17).
CREATE TRIGGER jobs_workflow_slot_end AFTER UPDATE OF status ON jobs
WHEN new.workflow_id IS NOT NULL
    AND new.status IN ('succeeded', 'failed', 'cancelled')
    AND old.status NOT IN ('succeeded', 'failed', 'cancelled')
    AND (SELECT slot FROM workflows WHERE id = new.workflow_id) IN ('waiting', 'held')
BEGIN
    UPDATE jobs SET pending_deps = pending_deps - 1
    WHERE workflow_id = new.workflow_id
        AND (SELECT slot FROM workflows WHERE id = new.workflow_id) = 'waiting'
        AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.workflow_id = new.workflow_id
            AND j.status IN ('queued', 'pending', 'running'));
    UPDATE workflows SET slot = 'freed'
    WHERE id = new.workflow_id
        AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.workflow_id = new.workflow_id
            AND j.status IN ('queued', 'pending', 'running'));
    UPDATE workflows SET slot = 'admitting'
    WHERE id = (SELECT w.id FROM workflows AS w
        WHERE w.name = (SELECT name FROM workflows WHERE id = new.workflow_id)
            AND w.slot = 'waiting'
        ORDER BY w.created_at, w.id LIMIT 1)
        AND concurrency > (SELECT count(*) FROM workflows AS h
            WHERE h.name = workflows.name AND h.slot = 'held');
    UPDATE jobs
    SET pending_deps = pending_deps - 1,
        status = CASE WHEN status = 'pending' AND pending_deps = 1 THEN 'queued'
            ELSE status END,
        scheduled = CASE WHEN status = 'pending' AND pending_deps = 1
            THEN run_at > new.updated_at ELSE scheduled END,
        updated_at = CASE WHEN status = 'pending' AND pending_deps = 1 THEN new.updated_at
            ELSE updated_at END
    WHERE workflow_id = (SELECT w.id FROM workflows AS w
        WHERE w.name = (SELECT name FROM workflows WHERE id = new.workflow_id)
            AND w.slot = 'admitting');
    UPDATE workflows SET slot = 'held'
    WHERE name = (SELECT name FROM workflows WHERE id = new.workflow_id)
        AND slot = 'admitting';
END;
-- The same for a deleted job (an operator's delete), at the wall clock's
-- time, since a delete carries no time of the store's clock.
CREATE TRIGGER jobs_workflow_slot_delete AFTER DELETE ON jobs
WHEN old.workflow_id IS NOT NULL
    AND old.status IN ('queued', 'pending', 'running')
    AND (SELECT slot FROM workflows WHERE id = old.workflow_id) IN ('waiting', 'held')
BEGIN
    UPDATE jobs SET pending_deps = pending_deps - 1
    WHERE workflow_id = old.workflow_id
        AND (SELECT slot FROM workflows WHERE id = old.workflow_id) = 'waiting'
        AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.workflow_id = old.workflow_id
            AND j.status IN ('queued', 'pending', 'running'));
    UPDATE workflows SET slot = 'freed'
    WHERE id = old.workflow_id
        AND NOT EXISTS (SELECT 1 FROM jobs AS j WHERE j.workflow_id = old.workflow_id
            AND j.status IN ('queued', 'pending', 'running'));
    UPDATE workflows SET slot = 'admitting'
    WHERE id = (SELECT w.id FROM workflows AS w
        WHERE w.name = (SELECT name FROM workflows WHERE id = old.workflow_id)
            AND w.slot = 'waiting'
        ORDER BY w.created_at, w.id LIMIT 1)
        AND concurrency > (SELECT count(*) FROM workflows AS h
            WHERE h.name = workflows.name AND h.slot = 'held');
    UPDATE jobs
    SET pending_deps = pending_deps - 1,
        status = CASE WHEN status = 'pending' AND pending_deps = 1 THEN 'queued'
            ELSE status END,
        scheduled = CASE WHEN status = 'pending' AND pending_deps = 1
            THEN run_at > strftime('%Y-%m-%dT%H:%M:%f000Z', 'now') ELSE scheduled END,
        updated_at = CASE WHEN status = 'pending' AND pending_deps = 1
            THEN strftime('%Y-%m-%dT%H:%M:%f000Z', 'now') ELSE updated_at END
    WHERE workflow_id = (SELECT w.id FROM workflows AS w
        WHERE w.name = (SELECT name FROM workflows WHERE id = old.workflow_id)
            AND w.slot = 'admitting');
    UPDATE workflows SET slot = 'held'
    WHERE name = (SELECT name FROM workflows WHERE id = old.workflow_id)
        AND slot = 'admitting';
END;
-- A retried job of a workflow whose slot was freed makes it hold one again,
-- at once: an operator's retry runs without waiting for a slot (schema
-- version 17).
CREATE TRIGGER jobs_workflow_slot_retry AFTER UPDATE OF status ON jobs
WHEN new.workflow_id IS NOT NULL
    AND old.status IN ('succeeded', 'failed', 'cancelled')
    AND new.status IN ('queued', 'pending')
BEGIN
    UPDATE workflows SET slot = 'held' WHERE id = new.workflow_id AND slot = 'freed';
END;

-- job_tags lists each tagged job under each of its tags, so that a listing
-- by tag reads one index range in seq order (ListJobsByTag) at any table
-- size. A side table, not an index on the jobs table: its rows are written
-- by the jobs table's insert and delete triggers only, so a claim, a retry
-- or a finish (updates of jobs) writes no tag entry, and untagged jobs cost
-- nothing but the trigger's condition (schema version 6).
CREATE TABLE job_tags (
    tag TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (tag, seq)
) WITHOUT ROWID;
-- A deleted job's tags are found by its seq.
CREATE INDEX job_tags_seq ON job_tags (seq);
CREATE TRIGGER jobs_tags_insert AFTER INSERT ON jobs WHEN new.tags <> '[]'
BEGIN
    INSERT INTO job_tags (tag, seq) SELECT DISTINCT value, new.seq FROM json_each(new.tags);
END;
CREATE TRIGGER jobs_tags_delete AFTER DELETE ON jobs WHEN old.tags <> '[]'
BEGIN
    DELETE FROM job_tags WHERE seq = old.seq;
END;
-- A fed job that joins a sequence takes a new seq (FeedDependents): its
-- tags follow it. No other statement sets seq, so no other update runs it
-- (schema version 13).
CREATE TRIGGER jobs_tags_move AFTER UPDATE OF seq ON jobs
WHEN old.tags <> '[]' AND new.seq <> old.seq
BEGIN
    UPDATE job_tags SET seq = new.seq WHERE seq = old.seq;
END;

-- job_steps records the completed steps of a job's handler (ctx.step): each
-- step's output, JSON text written from typed data like a result, with the
-- attempt that recorded it and when. A later attempt of the job reads a
-- step's output instead of running the step again. A step is recorded only
-- while the claim of its attempt holds (RecordJobStep), and the jobs
-- table's delete trigger deletes a job's steps with it (schema version 7).
CREATE TABLE job_steps (
    job_id TEXT NOT NULL,
    name TEXT NOT NULL,
    output TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    PRIMARY KEY (job_id, name)
) WITHOUT ROWID;
CREATE TRIGGER jobs_steps_delete AFTER DELETE ON jobs
BEGIN
    DELETE FROM job_steps WHERE job_id = old.id;
END;

-- queues holds the flow control of the queues that have any: whether the
-- queue is paused, and its limits. A queue without a row, or whose row has
-- no limit and is not paused, is claimed as it always was. The limit columns
-- are the ones claims obey; the declared_ ones are what the code of the
-- latest runner that started declared, and they are copied over the limits
-- unless an operator set limits (overridden), which are kept until cleared
-- (schema version 4).
CREATE TABLE queues (
    name TEXT PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0,
    -- concurrency is the most jobs of the queue running at once, across
    -- every runner; partition_limit the most of one partition key.
    concurrency INTEGER CHECK (concurrency IS NULL OR concurrency >= 1),
    partition_limit INTEGER CHECK (partition_limit IS NULL OR partition_limit >= 1),
    -- rate_limit jobs at most start in any rate_period seconds; per key when
    -- rate_per_key is set.
    rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit >= 1),
    rate_period REAL CHECK (rate_period IS NULL OR rate_period > 0),
    rate_per_key INTEGER NOT NULL DEFAULT 0,
    declared_concurrency INTEGER,
    declared_partition_limit INTEGER,
    declared_rate_limit INTEGER,
    declared_rate_period REAL,
    declared_rate_per_key INTEGER NOT NULL DEFAULT 0,
    overridden INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    CHECK ((rate_limit IS NULL) = (rate_period IS NULL))
) WITHOUT ROWID;

-- queue_starts records when each job of a rate-limited queue started, one
-- row per attempt whatever its outcome, so that a claim counts the starts
-- of the last period; a claim deletes the rows older than its period.
-- started_at is seconds since 1970 on the clock of the process that claims
-- (a SQLite file is shared by the processes of one machine).
CREATE TABLE queue_starts (
    queue TEXT NOT NULL,
    partition_key TEXT,
    started_at REAL NOT NULL
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
    name TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    host TEXT,
    process TEXT,
    missing_keys TEXT
) WITHOUT ROWID;

-- signals holds the signals sent (Store.signal): a name, a key and the
-- payload, JSON text written from typed data. A job waiting for a signal
-- (JobContext.wait_for) receives the oldest one of its name and key that it
-- has not received yet, so one sent before the wait is not lost. The
-- maintenance deletes a signal once it is older than the retention. id
-- never repeats (AUTOINCREMENT), so a waiting job remembers what it received
-- as an id. Version 14 added it.
CREATE TABLE signals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    payload TEXT NOT NULL,
    sent_at TEXT NOT NULL
);
CREATE INDEX signals_by_key ON signals (name, key, id);
CREATE INDEX signals_by_time ON signals (sent_at);

-- job_waits holds what each waiting job waits for: a signal of name and key
-- newer than after_id, until deadline (null: no timeout). The job itself is
-- queued and scheduled at its deadline (or the end of year 9999), so it holds
-- no worker; a signal makes it ready at once. position is the wait's place in
-- the handler (its first wait is 1). The jobs table's delete trigger deletes
-- a job's wait with it. Version 14 added it.
CREATE TABLE job_waits (
    job_id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    after_id INTEGER NOT NULL,
    deadline TEXT,
    since TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX job_waits_by_key ON job_waits (name, key);
CREATE TRIGGER job_waits_delete AFTER DELETE ON jobs
BEGIN
    DELETE FROM job_waits WHERE job_id = old.id;
END;
