-- The mood of an account, with a value that is not a Python name.
CREATE TYPE mood AS ENUM ('happy', 'sad', 'so-so');

-- accounts holds one column per PostgreSQL type the asyncpg driver maps.
CREATE TABLE accounts (
    id bigserial PRIMARY KEY,
    handle varchar(40) NOT NULL,
    name text NOT NULL,
    bio text,
    code char(3),
    age int2,
    score int4 NOT NULL,
    visits int8,
    active bool NOT NULL,
    ratio float4,
    weight float8 NOT NULL,
    balance numeric(12, 2) NOT NULL,
    avatar bytea,
    token uuid NOT NULL,
    settings json,
    profile jsonb NOT NULL,
    created_at timestamp NOT NULL,
    updated_at timestamptz,
    birthday date,
    wakes time,
    wakes_tz timetz,
    wait interval,
    host inet,
    net cidr,
    price money,
    mood mood NOT NULL,
    maybe_mood mood,
    past_moods mood[] NOT NULL,
    maybe_moods mood[],
    tags text[] NOT NULL,
    lucky int4[],
    docs jsonb[]
);

CREATE TABLE events (
    id bigserial PRIMARY KEY,
    account_id int8 NOT NULL REFERENCES accounts (id),
    kind text NOT NULL,
    at timestamptz NOT NULL
);
