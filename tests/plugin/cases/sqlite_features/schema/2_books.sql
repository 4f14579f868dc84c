CREATE TABLE books (
    id INTEGER PRIMARY KEY,
    author_id INTEGER NOT NULL REFERENCES authors (id),
    name TEXT NOT NULL,
    isbn TEXT NOT NULL,
    sku TEXT NOT NULL
);

-- Names that are keywords, builtins, or the modules the code imports.
CREATE TABLE "class" (
    "def" INTEGER PRIMARY KEY,
    "None" TEXT NOT NULL,
    sqlite3 TEXT NOT NULL,
    dataclasses INTEGER NOT NULL,
    models TEXT NOT NULL,
    "str" TEXT,
    "lambda" BOOLEAN NOT NULL
);
-- a comment after the last statement

-- Spellings outside the list, typed by SQLite's rules of affinity.
CREATE TABLE spellings (
    id INTEGER PRIMARY KEY,
    small UNSIGNED SMALLINT NOT NULL,
    code VARCHAR2(10) NOT NULL,
    note TINYTEXT,
    ratio DOUBLE PRECISION NOT NULL,
    ref UUID NOT NULL,
    at TIME,
    raw LONGBLOB
);
