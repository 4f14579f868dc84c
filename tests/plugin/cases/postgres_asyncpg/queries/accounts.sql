-- name: CreateAccount :one
-- CreateAccount stores an account and returns it whole.
INSERT INTO accounts (
    handle, name, bio, code, age, score, visits, active, ratio, weight, balance,
    avatar, token, settings, profile, created_at, updated_at, birthday, wakes,
    wakes_tz, wait, host, net, price, mood, maybe_mood, past_moods, maybe_moods,
    tags, lucky, docs
) VALUES (
    @handle, @name, sqlc.narg(bio), sqlc.narg(code), sqlc.narg(age), @score,
    sqlc.narg(visits), @active, sqlc.narg(ratio), @weight, @balance,
    sqlc.narg(avatar), @token, sqlc.narg(settings), @profile, @created_at,
    sqlc.narg(updated_at), sqlc.narg(birthday), sqlc.narg(wakes),
    sqlc.narg(wakes_tz), sqlc.narg(wait), sqlc.narg(host), sqlc.narg(net),
    sqlc.narg(price), @mood, sqlc.narg(maybe_mood), @past_moods,
    sqlc.narg(maybe_moods), @tags, sqlc.narg(lucky), sqlc.narg(docs)
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

-- name: HandlesOf :many
SELECT handle FROM accounts WHERE id = ANY(sqlc.slice(ids)::bigint[]) ORDER BY id;

-- name: CountActive :one
SELECT count(*) AS total FROM accounts WHERE active = $1;

-- name: MoodOf :one
SELECT maybe_mood FROM accounts WHERE id = $1;

-- name: MoodsOf :many
SELECT mood FROM accounts ORDER BY id;

-- name: SetBio :execrows
UPDATE accounts SET bio = sqlc.narg(bio) WHERE id = sqlc.arg(id);

-- name: DeactivateAll :execresult
UPDATE accounts SET active = false WHERE active;

-- name: DeleteAccount :exec
DELETE FROM accounts WHERE id = @id;

-- name: SetBiosAndSettings :batchexec
-- SetBiosAndSettings updates many accounts in one call.
UPDATE accounts SET bio = sqlc.narg(bio), settings = sqlc.narg(settings) WHERE id = @id;

-- name: HandlesInSlice :many
-- HandlesInSlice writes sqlc.slice under IN and NOT IN, as on SQLite and MySQL.
SELECT handle FROM accounts
WHERE id IN (sqlc.slice(ids)) AND age NOT IN (sqlc.slice(ages))
ORDER BY id;

-- name: ServerTyped :one
-- ServerTyped's columns are typed as the server says: sqlc says ceil()
-- is a float, NULLIF() a bool.
SELECT ceil(id::numeric / 2) AS half_up, abs(id::numeric) AS magnitude,
    NULLIF(id, sqlc.arg(unless)) AS kept
FROM accounts WHERE id = sqlc.arg(id);

-- name: Days :many
SELECT generate_series(sqlc.arg(start)::timestamptz, sqlc.arg(stop)::timestamptz, '1 day') AS day;
