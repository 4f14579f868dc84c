-- name: CreateAccount :one
-- CreateAccount stores an account and returns it whole.
INSERT INTO accounts (
    handle, name, bio, age, score, visits, active, ratio, weight, balance,
    avatar, token, settings, profile, created_at, updated_at, birthday, tags, lucky
) VALUES (
    @handle, @name, sqlc.narg(bio), sqlc.narg(age), @score, sqlc.narg(visits), @active,
    sqlc.narg(ratio), @weight, @balance, sqlc.narg(avatar), @token, sqlc.narg(settings),
    @profile, @created_at, sqlc.narg(updated_at), sqlc.narg(birthday), @tags, sqlc.narg(lucky)
)
RETURNING *;

-- name: GetAccount :one
SELECT * FROM accounts WHERE id = $1;

-- name: ListAccountsByBio :many
-- ListAccountsByBio matches accounts whose bio equals bio; a NULL bio matches
-- accounts without one.
SELECT id, handle, bio FROM accounts
WHERE bio IS NOT DISTINCT FROM sqlc.narg(bio)
ORDER BY id;

-- name: SearchHandles :many
-- SearchHandles keeps literal percent signs and a $1 inside a string intact.
SELECT id, handle, 'costs $1 or 100%' AS note FROM accounts
WHERE handle LIKE '%' || sqlc.arg(fragment)::text || '%'
ORDER BY id;

-- name: CountActive :one
SELECT count(*) AS total FROM accounts WHERE active = $1;

-- name: SetBio :execrows
UPDATE accounts SET bio = sqlc.narg(bio) WHERE id = sqlc.arg(id);

-- name: DeleteAccount :exec
DELETE FROM accounts WHERE id = @id;

-- name: SetBiosAndSettings :batchexec
-- SetBiosAndSettings updates many accounts in one call; NULLs and JSON go
-- through the same conversions as in a single statement.
UPDATE accounts SET bio = sqlc.narg(bio), settings = sqlc.narg(settings) WHERE id = @id;
