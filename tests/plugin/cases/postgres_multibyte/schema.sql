-- Notes — in a schema comment: 名前と説明.
CREATE TABLE notes (
    id bigserial PRIMARY KEY,
    title text NOT NULL,
    body text NOT NULL DEFAULT 'café — ☕'
);
