-- name: AddReading :exec
INSERT INTO readings (value, price, at, note, tags) VALUES ($1, $2, $3, $4, $5);

-- name: Extremes :one
SELECT max(value) AS top, min(r.price) AS cheapest, max(at) AS latest FROM readings r;

-- name: Total :one
SELECT coalesce(sum(value), 0) AS total FROM readings;

-- name: Notes :many
SELECT coalesce(note, '') AS note FROM readings ORDER BY id;

-- name: Joined :many
SELECT (note || '!') AS shout FROM readings ORDER BY id;

-- name: Tags :many
SELECT same_array(tags) AS tags FROM readings ORDER BY id;

-- name: Sorted :many
SELECT id FROM readings ORDER BY CASE WHEN $1 = 'value' THEN value ELSE -id END;
