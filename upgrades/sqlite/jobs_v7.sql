-- The jobs table of schema version 7, as the upgrade to version 8 renames it:
-- the upgrade queries read it, so sqlc must know its columns. Never applied:
-- it only describes the table that upgrade_v8.sql copies from.
CREATE TABLE jobs_v7 (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL,
    status TEXT NOT NULL,
    payload TEXT NOT NULL,
    result TEXT,
    error TEXT,
    errors TEXT NOT NULL,
    runner TEXT,
    attempt INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    timeout REAL,
    cancel_requested INTEGER NOT NULL,
    scheduled INTEGER NOT NULL,
    run_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    updated_at TEXT NOT NULL,
    unique_key TEXT,
    unique_statuses INTEGER,
    traceparent TEXT,
    partition_key TEXT,
    sequence_key TEXT,
    sequence_blocks INTEGER NOT NULL,
    tags TEXT NOT NULL,
    meta TEXT
);
