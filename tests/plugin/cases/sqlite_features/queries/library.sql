-- name: AddAuthor :execresult
INSERT INTO authors (name, rating, price) VALUES (?, ?, ?);

-- name: GetAuthor :one
SELECT * FROM authors WHERE id = ?;

-- name: AddBook :execlastid
INSERT INTO books (author_id, name, isbn, sku) VALUES (@author_id, @name, @isbn, @sku);

-- name: CopyBooks :copyfrom
INSERT INTO books (author_id, name, isbn, sku) VALUES (?, ?, ?, ?);

-- name: BooksByIds :many
SELECT * FROM books WHERE id IN (sqlc.slice(ids)) ORDER BY id;

-- name: BookNamesOf :many
-- BookNamesOf mixes a slice between named parameters, one of them used twice.
SELECT name FROM books
WHERE author_id = @author AND id IN (sqlc.slice(ids)) AND name <> @skip AND isbn <> @skip
  AND id NOT IN (sqlc.slice(excluded))
ORDER BY id;

-- name: AuthorsAndBooks :many
SELECT authors.id, books.id, authors.name, books.name FROM authors JOIN books ON books.author_id = authors.id
ORDER BY books.id;

-- name: BooksWithAuthor :many
SELECT sqlc.embed(books), sqlc.embed(authors) FROM books JOIN authors ON authors.id = books.author_id
ORDER BY books.id;

-- name: CountBooks :one
SELECT count(*) AS n FROM books;

-- name: BookNames :many
SELECT name FROM books ORDER BY id;

-- name: TopRating :one
SELECT CAST(max(rating) AS NUMERIC) AS top FROM authors;

-- name: Del :execrows
DELETE FROM books WHERE id = ?;

-- name: Is :one
SELECT count(*) FROM books WHERE name = ?;

-- name: AddClass :exec
INSERT INTO "class" ("def", "None", sqlite3, dataclasses, models, "str", "lambda")
VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: GetClass :one
SELECT * FROM "class" WHERE "def" = ?;

-- name: Percent :one
SELECT '100%' AS text, 7 % 2 AS rest;

-- name: AddSpelling :exec
INSERT INTO spellings (small, code, note, ratio, ref, at, raw) VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: GetSpellings :many
SELECT * FROM spellings ORDER BY id;

-- name: Extremes :one
-- Extremes has columns sqlc types as any, mapped by the db_type override.
SELECT max(rating) AS top, ifnull(min(name), 0) AS lowest FROM authors;

-- name: BareAroundSlice :many
-- BareAroundSlice has bare placeholders, which sqlc numbers before the slice.
SELECT name FROM books WHERE name <> ? AND id IN (sqlc.slice(ids)) ORDER BY id LIMIT ?;

-- name: AuthorsWithBooks :many
SELECT sqlc.embed(authors), sqlc.embed(books) FROM authors LEFT OUTER JOIN books ON books.author_id = authors.id
ORDER BY authors.id, books.id;

-- name: AuthorsPricedAt :many
SELECT name FROM authors WHERE price IN (sqlc.slice(prices)) ORDER BY id;

-- name: NameUnless :one
-- NameUnless may return NULL in a row though sqlc says NOT NULL: its row
-- tells a NULL from no row.
SELECT CAST(NULLIF(name, @unless) AS TEXT) AS name FROM authors WHERE id = @id;

-- name: Rounded :one
-- Rounded's columns are typed as SQLite returns them: sqlc says ceil(),
-- floor() and trunc() return an INTEGER, which they do only of an integer.
SELECT ceil(1.5) AS up, floor(ratio) AS down, trunc(id) AS whole, ceiling(-2e3) AS low
FROM spellings WHERE id = @id;
