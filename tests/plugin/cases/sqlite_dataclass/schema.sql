-- samples holds one column per SQLite type spelling the plugin maps.
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL,
    note TEXT,
    code VARCHAR(255) NOT NULL,
    initial CHAR(1),
    nick NVARCHAR(40),
    body CLOB,
    count INT NOT NULL,
    small SMALLINT,
    tiny TINYINT,
    big BIGINT,
    ratio REAL NOT NULL,
    weight DOUBLE,
    precise DOUBLE PRECISION,
    rough FLOAT,
    data BLOB,
    flag BOOLEAN NOT NULL,
    maybe BOOL,
    doc JSON,
    seen_at DATETIME,
    born DATE
);

CREATE TABLE tags (
    sample_id INTEGER NOT NULL REFERENCES samples (id),
    name TEXT NOT NULL
);
