CREATE TABLE authors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    rating NUMERIC,
    price DECIMAL(10, 2) NOT NULL
)
