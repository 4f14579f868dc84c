-- name: AddReading :exec
INSERT INTO readings (value, price, done, note, loose, doc) VALUES (?, ?, ?, ?, ?, ?);

-- name: Extremes :one
SELECT max(value) AS top, min(r.price) AS cheapest, max(done) AS any_done FROM readings r;

-- name: Highest :one
SELECT max(value) FROM readings;

-- name: Total :one
SELECT coalesce(sum(value), 0) AS total FROM readings;

-- name: Notes :many
SELECT coalesce(note, '') AS note FROM readings ORDER BY id;

-- name: Paths :many
SELECT json_extract(note, '$.a') AS a FROM readings ORDER BY id;

-- name: Loose :many
SELECT loose, doc FROM readings ORDER BY id;
