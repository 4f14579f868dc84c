-- The SQLite schema of jobtable. Store.open applies it to a new database and
-- records its version in PRAGMA user_version; bump SCHEMA_VERSION (in
-- src/jobtable/_sqlite_file.py) with every change here.

-- jobs holds one row per job: the table itself is the queue.
CREATE TABLE jobs (
    -- seq is the enqueue order; claims take the lowest first, so jobs run in
    -- the order they were enqueued, even within one clock tick.
    seq INTEGER PRIMARY KEY,
    -- id is 128 random bits as URL-safe text: it appears in URLs and must not
    -- be guessable.
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    -- payload and result are JSON text written by the runner from typed data.
    payload TEXT NOT NULL,
    result TEXT,
    -- error is a Failure message or one the runner writes itself, never a
    -- handler's exception text; it is set exactly when the job failed.
    error TEXT CHECK ((error IS NOT NULL) = (status = 'failed')),
    -- runner names the runner that claimed the job; attempt counts claims and
    -- fences every write a worker makes, so a worker that lost its claim can
    -- never change the job afterwards.
    runner TEXT,
    attempt INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
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
    name TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
) WITHOUT ROWID;
