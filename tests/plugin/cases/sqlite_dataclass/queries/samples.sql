-- name: InsertSample :execlastid
-- InsertSample stores a sample and returns its rowid.
INSERT INTO samples (
    label, note, code, initial, nick, body, count, small, tiny, big,
    ratio, weight, precise, rough, data, flag, maybe, doc, seen_at, born
) VALUES (
    @label, sqlc.narg(note), @code, sqlc.narg(initial), sqlc.narg(nick), sqlc.narg(body),
    @count, sqlc.narg(small), sqlc.narg(tiny), sqlc.narg(big),
    @ratio, sqlc.narg(weight), sqlc.narg(precise), sqlc.narg(rough), sqlc.narg(data),
    @flag, sqlc.narg(maybe), sqlc.narg(doc), sqlc.narg(seen_at), sqlc.narg(born)
);

-- name: GetSample :one
SELECT * FROM samples WHERE id = sqlc.arg(id);

-- name: GetLabel :one
-- GetLabel returns a partial row, so it gets its own row class.
SELECT id, label, note FROM samples WHERE id = ?;

-- name: ListSamplesByFlag :many
SELECT * FROM samples WHERE flag = ? ORDER BY id;

-- name: ListLabelsByNote :many
-- ListLabelsByNote matches rows whose note equals note; a NULL note matches
-- rows without one.
SELECT id, label FROM samples WHERE note IS sqlc.narg(note) ORDER BY id;

-- name: CountSamples :one
SELECT count(*) AS total FROM samples;

-- name: RenameSamples :execrows
UPDATE samples SET label = @new_label WHERE label = @old_label;

-- name: DeleteSample :exec
DELETE FROM samples WHERE id = @id;
