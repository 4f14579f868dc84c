-- Notes — in a schema comment: 名前と説明.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT 'café — ☕'
);
