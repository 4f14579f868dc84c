-- The jobs table of schema version 1, as an upgrade renames it: the upgrade
-- queries read it, so sqlc must know its columns. Never applied: it only
-- describes the table that upgrade_v2.sql copies from.
CREATE TABLE jobs_v1 (
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
