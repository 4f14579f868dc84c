-- name: AddTag :exec
INSERT INTO tags (sample_id, name) VALUES (?, ?);

-- name: ListTags :many
SELECT * FROM tags WHERE sample_id = @sample_id ORDER BY name;

-- name: DeleteTags :execrows
DELETE FROM tags WHERE sample_id = @sample_id;

-- name: AddTags :batchexec
-- AddTags stores many tags in one call.
INSERT INTO tags (sample_id, name) VALUES (@sample_id, @name);
