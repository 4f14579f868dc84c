-- name: PutSetting :one
-- PutSetting stores a setting whose columns share names with BaseModel's attributes.
INSERT INTO settings (id, json, schema, copy, model_config, level)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: SettingsAtLevels :many
SELECT id, level FROM settings WHERE level = ANY(@levels::level[]) ORDER BY id;

-- name: SetSchemas :batchexec
UPDATE settings SET schema = @schema, json = @json WHERE id = @id;

-- name: GetSetting :one
SELECT * FROM settings WHERE id = $1;
