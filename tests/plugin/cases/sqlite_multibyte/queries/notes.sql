-- Notes: queries whose file holds multi-byte text — an em dash, CJK (名前), emoji 🎉.

-- name: CreateNote :execlastid
-- Adds a note — its body defaults to 'café — ☕'.
INSERT INTO notes (title) VALUES (?);

-- name: GetNote :one
-- 一件を取得する。
SELECT id, title, body FROM notes WHERE id = ?;

-- name: RenameNote :execrows
UPDATE notes SET title = ? WHERE id = ? AND title <> 'ünïcödé — 名前';

-- name: NotesTitled :many
-- Matches a literal of every width: 'é' (2 bytes), '—' (3), '🎉' (4).
SELECT id, title FROM notes WHERE title IN ('é', '—', '🎉', ?) ORDER BY id;

-- name: CountDefaults :one
SELECT count(*) AS total FROM notes WHERE body = 'café — ☕';

-- After the last query — a trailing comment: 終わり.
