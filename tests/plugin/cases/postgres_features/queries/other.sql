-- name: AddItem :one
INSERT INTO inventory.items (sku, grade) VALUES ($1, $2) RETURNING *;

-- name: Grades :many
SELECT grade FROM inventory.items ORDER BY id;

-- name: AddStatus :exec
INSERT INTO statuses (id, status) VALUES ($1, $2);

-- name: GetStatus :one
SELECT * FROM statuses WHERE id = $1;

-- name: AddNews :exec
INSERT INTO news (id, headline) VALUES ($1, $2);

-- name: GetNews :one
SELECT * FROM news WHERE id = $1;

-- name: AddShelf :exec
INSERT INTO shelf (id, label) VALUES ($1, $2);

-- name: GetShelf :one
SELECT * FROM shelf WHERE id = $1;

-- name: AddKinds :exec
INSERT INTO kinds (
    id, host, maybe_host, net, span, big_span, amounts, days, moments, spans,
    attrs, maybe_attrs, docs, maybe_docs, flags, hosts, tags, maybe_tags
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18);

-- name: GetKinds :one
SELECT * FROM kinds WHERE id = $1;

-- name: AddNone :exec
INSERT INTO "none" ("class", "in", uuid, datetime, models, "list", decimal)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: GetNone :one
SELECT * FROM "none" WHERE "class" = $1;

-- name: Del :execrows
DELETE FROM "none" WHERE uuid = $1 AND datetime < $2 AND models = $3;

-- name: AddTextForms :exec
INSERT INTO text_forms (id, cash, doc, words, mac, bits, spot, boxes, lsn, duo, duos)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- name: GetTextForms :one
SELECT * FROM text_forms WHERE id = $1;

-- name: KindsWithDocs :many
SELECT id FROM kinds WHERE docs[1] = ANY(sqlc.slice(docs)::jsonb[]) ORDER BY id;

-- name: LockFor :one
SELECT pg_advisory_xact_lock($1) AS locked, count(*) AS kinds FROM kinds;

-- name: PairOf :one
SELECT pair_of($1) AS rec;

-- name: BareShelves :many
SELECT FROM shelf ORDER BY id;

-- name: BareShelf :one
SELECT FROM shelf WHERE id = $1;
