-- name: GetKind :one
SELECT * FROM kinds WHERE id = ?;

-- name: ListKindsByMood :many
SELECT id, name, mood FROM kinds WHERE mood = ? ORDER BY id;

-- name: CreateKind :execlastid
INSERT INTO kinds (
  flag, maybe, tiny, tiny_u, small, medium, regular, big, amount, ratio, dbl,
  name, code, body, data, bin, vbin, day, at, ts, dur, yr, doc, mood, tags, `bits`
) VALUES (
  ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
);

-- name: RenameKind :execrows
UPDATE kinds SET name = ? WHERE id = ?;

-- name: RetagKind :execresult
UPDATE kinds SET tags = ? WHERE id = ?;

-- name: DeleteKind :exec
DELETE FROM kinds WHERE id = ?;

-- name: CountKinds :one
SELECT count(*) FROM kinds;

-- name: KindNames :many
SELECT name FROM kinds ORDER BY id;

-- Percent signs and question marks in strings, identifiers and comments are
-- text; only the bare ? outside them is a parameter.
-- name: FindLike :many
SELECT id, concat(name, '?%') AS label, 5 % 3 AS five_mod -- a ? here
FROM kinds /* and ? here */
WHERE name LIKE ? AND body <> "?" # one ? more
ORDER BY id;

-- name: NoParamsPercent :one
SELECT concat('100', '%') AS pct;

-- name: KindsByIds :many
SELECT id, name FROM kinds
WHERE id IN (sqlc.slice(ids)) AND mood <> sqlc.arg(mood)
ORDER BY id;

-- name: MaxAmount :one
SELECT max(amount) AS top FROM kinds;

-- name: IsNamed :one
SELECT name = ? AS same FROM kinds WHERE id = ?;
