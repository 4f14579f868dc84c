-- name: CreatePerson :one
INSERT INTO people (name, mood, past_moods, maybe_moods, maybe_mood, email)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: GetPerson :one
SELECT * FROM people WHERE id = $1;

-- name: PeopleInMoods :many
-- PeopleInMoods takes an array of enums.
SELECT id FROM people WHERE mood = ANY(@moods::mood[]) ORDER BY id;

-- name: PeopleByIds :many
SELECT name FROM people WHERE id = ANY(sqlc.slice(ids)) ORDER BY id;

-- name: PeopleAndPets :many
SELECT people.id, pets.id, people.name, pets.name
FROM people JOIN pets ON pets.owner_id = people.id
ORDER BY pets.id;

-- name: StarOverJoin :many
SELECT * FROM people JOIN pets ON pets.owner_id = people.id ORDER BY pets.id;

-- name: PetsWithOwner :many
SELECT sqlc.embed(people), pets.name AS pet FROM pets JOIN people ON people.id = pets.owner_id
ORDER BY pets.id;

-- name: AddPet :execresult
INSERT INTO pets (owner_id, name) VALUES ($1, $2);

-- name: CopyPets :copyfrom
INSERT INTO pets (owner_id, name) VALUES ($1, $2);

-- name: PetNames :batchone
SELECT name FROM pets WHERE id = $1;

-- name: PetsOf :batchmany
SELECT id, name FROM pets WHERE owner_id = $1 ORDER BY id;

-- name: CountPets :one
SELECT count(*) FROM pets;

-- name: MaybeEmail :one
SELECT email FROM people WHERE id = $1;

-- name: Percent :one
SELECT '100%' AS text, 7 % 2 AS rest;

-- name: PercentWithParam :one
SELECT ('100%' || $1::text)::text AS text, 7 % $2::int4 AS rest;

-- name: In :one
SELECT count(*) FROM people WHERE name = $1;

-- name: List :many
SELECT name FROM people ORDER BY id;

-- name: PetsById :batchone
SELECT id, owner_id, name FROM pets WHERE id = $1;

-- name: PeopleWithPets :many
-- PeopleWithPets embeds the outer side of a join: a person without pets has no pet.
SELECT sqlc.embed(people), sqlc.embed(pets) FROM people LEFT JOIN pets ON pets.owner_id = people.id
ORDER BY people.id, pets.id;

-- name: PeopleInSlice :many
-- PeopleInSlice writes sqlc.slice under IN and NOT IN, as on SQLite and MySQL.
SELECT name FROM people
WHERE id IN (sqlc.slice(ids)) AND mood NOT IN (sqlc.slice(moods)) AND name <> @skip
ORDER BY id;

-- name: NameUnless :one
-- NameUnless may return NULL in a row though sqlc says NOT NULL: its row
-- tells a NULL from no row.
SELECT NULLIF(name, sqlc.arg(unless)::text)::text AS name FROM people WHERE id = sqlc.arg(id);

-- name: LastPetId :one
SELECT CAST(max(id) AS bigint) AS last FROM pets;

-- name: ServerTyped :one
-- ServerTyped's columns are typed as the server says: sqlc says ceil()
-- is a float, NULLIF() a bool.
SELECT ceil(id::numeric / 2) AS half_up, abs(id::numeric) AS magnitude,
    NULLIF(id, sqlc.arg(unless)) AS kept
FROM people WHERE id = sqlc.arg(id);

-- name: Days :many
SELECT generate_series(sqlc.arg(start)::timestamptz, sqlc.arg(stop)::timestamptz, '1 day') AS day;
