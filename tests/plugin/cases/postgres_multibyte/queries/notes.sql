-- Notes: queries whose file holds multi-byte text — an em dash, CJK (名前), emoji 🎉.

-- name: CreateNote :one
-- Adds a note — its body defaults to 'café — ☕'.
INSERT INTO notes (title) VALUES (@title) RETURNING id;

-- name: GetNote :one
-- 一件を取得する。
SELECT id, title, body FROM notes WHERE id = @id;

-- name: RenameNote :execrows
UPDATE notes SET title = @title WHERE id = @id AND title <> 'ünïcödé — 名前';

-- name: NotesTitled :many
-- Matches a literal of every width: 'é' (2 bytes), '—' (3), '🎉' (4).
SELECT * FROM notes WHERE title IN ('é', '—', '🎉', @title::text) ORDER BY id;

-- name: CountDefaults :one
SELECT count(*) AS total FROM notes WHERE body = 'café — ☕' AND title LIKE '%—%';

-- After the last query — a trailing comment: 終わり.
