CREATE TYPE level AS ENUM ('low', 'high');

-- notes holds the types whose asyncpg values pydantic validates: an
-- asyncpg UUID, JSON text, addresses, members of an enum.
CREATE TABLE notes (
    id bigserial PRIMARY KEY,
    token uuid NOT NULL,
    "json" jsonb NOT NULL,
    host inet,
    level level NOT NULL,
    levels level[],
    amount numeric NOT NULL,
    at timestamptz NOT NULL
);
