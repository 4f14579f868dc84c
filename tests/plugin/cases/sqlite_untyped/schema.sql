CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    price DECIMAL(10, 2),
    done BOOLEAN,
    note TEXT,
    loose,
    doc JSONB
);
