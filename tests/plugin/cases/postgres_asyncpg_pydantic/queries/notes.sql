-- name: AddNote :one
INSERT INTO notes (token, "json", host, level, levels, amount, at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING *;

-- name: ListNotes :many
SELECT * FROM notes ORDER BY id;

-- name: Levels :many
SELECT id, level FROM notes ORDER BY id;

-- name: CopyNotes :copyfrom
INSERT INTO notes (token, "json", level, amount, at) VALUES ($1, $2, $3, $4, $5);
