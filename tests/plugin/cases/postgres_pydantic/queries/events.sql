-- name: RecordEvent :exec
INSERT INTO events (id, kind, payload, notification_settings_override, happened_at, amount)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: GetEvent :one
SELECT * FROM events WHERE id = @id;

-- name: ListEventSummaries :many
-- ListEventSummaries returns the events of kind, newest first.
SELECT id, payload, notification_settings_override, amount FROM events
WHERE kind = @kind
ORDER BY happened_at DESC;

-- name: ClearOverrides :execrows
UPDATE events SET notification_settings_override = NULL
WHERE notification_settings_override IS NOT NULL;
