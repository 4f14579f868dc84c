-- name: CopyEvents :copyfrom
-- CopyEvents writes many events through COPY; its columns are not in the
-- order of its parameters.
INSERT INTO events (at, account_id, kind) VALUES ($3, $1, $2);

-- name: ListEvents :many
-- ListEvents returns each event with its account, or none for an event of
-- no account.
SELECT sqlc.embed(events), sqlc.embed(accounts)
FROM events LEFT JOIN accounts ON accounts.id = events.account_id
ORDER BY events.id;

-- name: CountEvents :one
SELECT count(*) FROM events;
