-- name: AddNote :exec
INSERT INTO notes (kind_id, note, labels, state) VALUES (?, ?, ?, ?);

-- name: AddNotes :batchexec
INSERT INTO notes (kind_id, note, labels, state) VALUES (?, ?, ?, ?);

-- name: CopyNotes :copyfrom
INSERT INTO notes (kind_id, note, labels, state) VALUES (?, ?, ?, ?);

-- name: NotesWithKind :many
SELECT sqlc.embed(notes), kinds.name
FROM notes JOIN kinds ON kinds.id = notes.kind_id
WHERE notes.kind_id = ?
ORDER BY notes.id;

-- name: ListNotes :many
SELECT * FROM notes ORDER BY id;

-- name: AddPlain :execlastid
INSERT INTO plain (k) VALUES (?);

-- name: OtherNotes :many
SELECT note FROM notes WHERE kind_id = sqlc.arg(kind_id) AND note <> ? ORDER BY id;

-- name: RenameNotes :batchexec
UPDATE notes SET note = sqlc.arg(note) WHERE id = ?;
