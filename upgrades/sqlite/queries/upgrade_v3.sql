-- The step from schema version 2 to 3: nullable columns, added in place
-- (SQLite adds a column without rebuilding the table), then the schema's new
-- indexes, and jobs_finished anew with its new condition (schema.sql's DROP
-- and CREATE statements), all in the one transaction that records the new
-- version. Every job is kept, not unique and with no trace context.

-- name: AddUniqueKeyColumnV3 :exec
ALTER TABLE jobs ADD COLUMN unique_key TEXT;

-- name: AddUniqueStatusesColumnV3 :exec
ALTER TABLE jobs ADD COLUMN unique_statuses INTEGER CHECK (
    (unique_statuses IS NULL) = (unique_key IS NULL)
    AND (unique_statuses IS NULL OR ((unique_statuses & 3) = 3 AND unique_statuses < 32))
);

-- name: AddTraceparentColumnV3 :exec
ALTER TABLE jobs ADD COLUMN traceparent TEXT;

